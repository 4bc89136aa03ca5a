"""Reports over the store: results frames (pandas), comparison tables, plots, regression checks."""
