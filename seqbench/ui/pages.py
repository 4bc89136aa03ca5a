"""The dashboard's pages (`seqbench ui`): each a method of `Dashboard` that reads through the
api, as the CLI's commands do (no SQL here), and returns its title, its HTML and whether it
refreshes itself, made of ui/markup.py's pieces (the page around them: `render_page`). Charts are
the figures `--plot` writes, drawn by matplotlib as inline SVG (ui/charts.py). The HTTP server
that answers with them is ui/server.py."""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

from seqbench import api
from seqbench.errors import NotFoundError, SeqbenchError
from seqbench.ui import markup
from seqbench.ui.markup import cell, field, link, option


class NotFound(NotFoundError):
    """What a request named is not there (a page, a sweep): a 404 that says which."""


# matplotlib's figure machinery is not thread-safe: one chart is drawn at a time
_DRAW = threading.Lock()


class Dashboard:
    """The pages over one store: each method takes the query (a dict of lists) and returns
    (title, body HTML, refresh seconds or None). `words` turns the library's text (an
    answer's sentence, a warning, an error) into the words of the front end that started the
    dashboard: `seqbench ui` hands over the CLI's, which names flags."""

    def __init__(self, db: str | None, words: Callable[[str], str] = str):
        self.db = db
        self.words = words  # the library's text as the front end that started it spells it
        self.store = api.open_store(db, "read")  # a bad --db fails here, in one line

    def close(self) -> None:
        self.store.dispose()

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _one(q: dict, name: str, default: str = "") -> str:
        return (q.get(name) or [default])[0].strip()

    @staticmethod
    def _ids(q: dict) -> list[int]:
        out = []
        for v in api.split_list(q.get("run")):
            # isdecimal, not isdigit: '²' is a digit that int() refuses
            if not (v.isascii() and v.isdecimal() and 0 < int(v) < 2**63):
                raise SeqbenchError(f"run ids are positive whole numbers, got {v!r}")
            out.append(int(v))
        return out

    def _report(self, q: dict, by_default: str = "k"):
        ids, sweep = self._ids(q), self._one(q, "sweep") or None
        by = self._one(q, "by", by_default) or None
        metric = self._one(q, "metric", "test_metric")
        where = f"run_id IN ({', '.join(map(str, ids))})" if ids else None
        models = api.split_list(q.get("models")) or None
        with api.open_store(self.db, "lean") as reader:
            rep = api.build_report(
                reader, compare=models, metric=metric, by=by, sweep=sweep, where=where
            )
        return rep, ids, sweep, by, metric

    def _require_sweep(self, name: str) -> None:
        """NotFound for a sweep the store does not hold (one indexed read of that sweep)."""
        try:
            api.sweep_status(self.store, name)
        except NotFoundError:
            raise NotFound(f"no sweep {name!r} in this store") from None

    # -- pages ----------------------------------------------------------------------------
    def runs(self, q: dict):
        filters = {n: self._one(q, n) or None for n in ("model", "task", "status", "sweep")}
        filters["kind"] = self._one(q, "kind", "train") or None
        tag = self._one(q, "tag")
        if tag:
            filters["tags"] = api.parse_assignments([tag], "tag")
        listed = api.list_runs(self.store, limit=0, **filters)
        search = self._one(q, "q").lower()
        rows = []
        for r, metric in listed:
            text = " ".join(str(x) for x in (r.id, r.name, r.model, r.task, r.status, r.tags))
            if search and search not in text.lower():
                continue
            rows.append([r, metric])
        sort, desc = self._one(q, "sort", "id"), self._one(q, "desc", "1") == "1"
        keys: dict[str, Callable] = {
            "id": lambda x: x[0].id,
            "model": lambda x: x[0].model,
            "task": lambda x: x[0].task,
            "k": lambda x: (x[0].k is None, x[0].k or 0),
            "seed": lambda x: x[0].seed or 0,
            "status": lambda x: x[0].status,
            "test_metric": lambda x: (x[1] is None, x[1] if x[1] is not None else 0.0),
            "wall_s": lambda x: x[0].wall_seconds or 0.0,
        }
        if sort not in keys:
            raise SeqbenchError(f"cannot sort by {sort!r}; by one of {', '.join(keys)}")
        rows.sort(key=keys[sort], reverse=desc)
        base = {k: v for k, v in {**filters, "q": search, "tag": tag}.items() if isinstance(v, str)}

        def head(col: str) -> str:
            if col not in keys:
                return html.escape(col)
            flip = "0" if col == sort and desc else "1"
            return link("/", col, **base, sort=col, desc=flip)

        cols = ["", "id", "name", "model", "task", "k", "seed", "status", "metric",
                "test_metric", "wall_s"]  # fmt: skip
        body_rows = [
            [
                f'<input type="checkbox" name="run" value="{r.id}">',
                link(f"/run/{r.id}", r.id),
                r.name,
                r.model,
                r.task,
                r.k,
                r.seed,
                f'<span class="status-{cell(r.status)}">{cell(r.status)}</span>',
                api.metric_name(r.task),
                metric,
                r.wall_seconds,
            ]
            for r, metric in rows
        ]
        heads = ["select", *(head(c) for c in cols[1:])]  # sortable columns link
        table = markup.table(cols, body_rows, ident="runs", raw=("", "id", "status"), heads=heads)
        form = (
            '<form class="filters" method="get" action="/">'
            + "".join(field(n, base.get(n, "")) for n in ("model", "task", "status", "sweep"))
            + field("tag", tag, "tag key=value")
            + field("q", search, "search")
            + '<button type="submit" id="filter">filter</button></form>'
        )
        picked = (
            '<form method="get" action="/compare">'
            + table
            + '<button type="submit" id="compare">compare selected</button> '
            + '<button type="submit" formaction="/curves" id="curves">curves of selected</button>'
            + "</form>"
        )
        note = f'<p class="note">{len(rows)} runs</p>'
        return "Runs", form + note + picked, None

    def run(self, q: dict, ref: str):
        r, summaries, last = api.run_details(self.store, ref)
        parts = [f"<p class='note'>{cell(r.model)} on {cell(r.task)} ({cell(r.status)})</p>"]
        if r.error:
            parts.append(f"<pre>{html.escape(r.error.strip().splitlines()[-1])}</pre>")
        parts.append(
            "<h3>summaries</h3>" + markup.table(["summary", "value"], list(summaries.items()))
        )
        latest = [[k, v, step] for k, (step, v) in last.items()]
        parts.append("<h3>last logged</h3>" + markup.table(["metric", "value", "step"], latest))
        keys = [k for k in ("valid_metric", "train_loss") if k in last]
        if keys:
            from seqbench.ui.charts import svg

            groups, frame = api.grouped_curves(self.store, [r], keys[0], ["model"], "std")
            if not frame.empty:
                with _DRAW:
                    fig, _ = api.plot_grouped(frame, groups, keys[0], "std", None, r.task)
                    chart = svg(fig)
                parts.append(f"<h3>{cell(keys[0])}</h3><div class='chart'>{chart}</div>")
        conf = sorted((r.config or {}).items())
        parts.append("<h3>config</h3>" + markup.table(["field", "value"], conf))
        env = sorted((r.environment or {}).items())
        parts.append("<h3>environment</h3>" + markup.table(["key", "value"], env))
        return f"run {r.id}", "".join(parts), (3 if r.status == "running" else None)

    def compare(self, q: dict):
        from seqbench.ui.charts import svg

        rep, ids, sweep, by, metric = self._report(q)
        form = (
            '<form class="filters" method="get" action="/compare">'
            + "".join(f'<input type="hidden" name="run" value="{i}">' for i in ids)
            + field("sweep", sweep or "")
            + field("models", self._one(q, "models"), "models rnn,tcn")
            + field("by", by or "", "by k,seq_len")
            + field("metric", metric)
            + '<button type="submit">compare</button></form>'
        )
        if rep is None:
            return "Compare", form + "<p>no completed runs match: nothing to compare</p>", None
        notes = "".join(f'<p class="note">note: {html.escape(n)}</p>' for n in rep.notes)
        if rep.compare:
            cols, rows, best = api.comparison_rows(rep)
        else:
            cols, rows, best = api.leaderboard_rows(rep)
        cells = [[api.format_cell(v) for v in r] for r in rows]
        table = markup.table(cols, cells, ident="report", bold=best)
        with _DRAW:
            drawn = svg(api.plot_report(rep, None))
        chart = f"<div class='chart' id='report-chart'>{drawn}</div>"
        return "Compare", form + notes + table + chart, None

    def curves(self, q: dict):
        from seqbench.ui.charts import svg

        ids, sweep = self._ids(q), self._one(q, "sweep") or None
        metric = self._one(q, "metric", "valid_metric")
        group_by = self._one(q, "group_by", "model,k")
        band = self._one(q, "band", "std")
        form = (
            '<form class="filters" method="get" action="/curves">'
            + "".join(f'<input type="hidden" name="run" value="{i}">' for i in ids)
            + field("sweep", sweep or "")
            + field("metric", metric)
            + field("group_by", group_by, "group by model,k")
            + f'<select name="band">{"".join(option(b, band) for b in ("std", "ci"))}</select>'
            + '<button type="submit">draw</button></form>'
        )
        if not ids and not sweep:
            return "Curves", form + "<p>pick runs on the Runs page, or name a sweep</p>", None
        if sweep and not ids:
            self._require_sweep(sweep)
        runs = api.curve_runs(self.store, [str(i) for i in ids], sweep=sweep)
        if not runs:
            return "Curves", form + f"<p>sweep {html.escape(sweep or '')} has no runs yet</p>", 2
        groups, frame = api.grouped_curves(self.store, runs, metric, api.split_list(group_by), band)
        if frame.empty:
            return "Curves", form + f"<p>no {html.escape(metric)} logged for these runs</p>", None
        with _DRAW:
            fig, drawn = api.plot_grouped(frame, groups, metric, band, None, runs[0].task)
            chart = svg(fig)
        rows = [[label, len(groups[label])] for label, _ in drawn]
        table = markup.table(["group", "runs"], rows, ident="groups")
        return "Curves", form + f"<div class='chart'>{chart}</div>" + table, None

    def sweeps(self, q: dict):
        rows = [
            [link("/sweep", s["name"], name=s["name"]), s["status"], s["total"], s["completed"],
             s["diverged"], s["running"], s["failed"], s["remaining"], s["created"]]
            for s in api.sweep_status(self.store)
        ]  # fmt: skip
        cols = ["sweep", "status", "points", "completed", "diverged", "running", "failed",
                "remaining", "created"]  # fmt: skip
        table = markup.table(cols, rows, ident="sweeps", raw=("sweep",))
        running = any(r[1] == "running" for r in rows)
        return "Sweeps", table, (2 if running else None)

    def sweep(self, q: dict):
        name = self._one(q, "name")
        if not name:
            raise NotFound("no sweep '' in this store")
        try:
            status, points = api.sweep_points(self.store, name)
        except NotFoundError:
            raise NotFound(f"no sweep {name!r} in this store") from None
        counts = [[k, status.get(k)] for k in ("status", "total", "completed", "diverged",
                                               "running", "failed", "remaining")]  # fmt: skip
        rows = []
        for p in points:
            latest = ", ".join(f"{k} {v:.4g} @ {s}" for k, (s, v) in sorted(p["latest"].items()))
            run = link(f"/run/{p['run_id']}", p["run_id"]) if p["run_id"] else ""
            badge = f'<span class="status-{cell(p["status"])}">{cell(p["status"])}</span>'
            rows.append(
                [p["position"], p["model"], p["task"], p["k"], p["seed"], badge, run, latest]
            )
        flight = [r for r, p in zip(rows, points, strict=True) if p["status"] == "running"]
        cols = ["point", "model", "task", "k", "seed", "status", "run", "latest metric"]
        body = (
            f"<h2>sweep {html.escape(name)}</h2>"
            + markup.table(["", "points"], counts, ident="counts")
            + f"<h3>in flight ({len(flight)})</h3>"
            + markup.table(cols, flight, ident="flight", raw=("status", "run"))
            + "<h3>every point</h3>"
            + markup.table(cols, rows, ident="points", raw=("status", "run"))
            + link("/compare", "compare this sweep's models", sweep=name)
            + " · "
            + link("/curves", "its curves", sweep=name)
        )
        return f"sweep {name}", body, (2 if status.get("status") == "running" else None)

    def memory(self, q: dict):
        """The stored answers of `seqbench memory`, and one of them in full: its sentence,
        warnings, every cell and the metric against k with k* marked."""
        from seqbench.ui.charts import svg

        answers = api.memory_answers(self.store)
        rows = [
            [link("/memory", a["name"], name=a["name"]), a["label"], a["verdict"], a["k_star"],
             a["interval"], a["tolerance"], len(a["run_ids"]), "stale" if a["stale"] else ""]
            for a in answers
        ]  # fmt: skip
        cols = ["answer", "task", "verdict", "k*", "interval", "tolerance", "runs", "stale"]
        body = markup.table(cols, rows, ident="answers", raw=("answer",))
        chosen = self._one(q, "name") or (answers[0]["name"] if answers else "")
        if not chosen:
            return "Memory", body + "<p>No answer yet: run <code>seqbench memory</code>.</p>", None
        picked = [a for a in answers if a["name"] == chosen]
        if not picked:
            raise NotFound(f"no memory answer {chosen!r} in this store")
        a = picked[0]
        d = a["details"]
        body += f"<h3 id='sentence'>{cell(self.words(a['sentence']))}</h3>"
        if a["stale"]:
            body += "<p class='warning'>stale: a run it rests on was deleted or archived since; "
            body += "run the same <code>seqbench memory</code> command again.</p>"
        for w in d.get("warnings", []):
            body += f"<p class='warning'>warning: {cell(self.words(w))}</p>"
        if d.get("lr_chosen"):  # --lr-search: the rates chosen on validation
            body += f"<p id='lr-chosen'>note: {cell(self.words(d['lr_chosen']))}</p>"
        head, cells = api.memory_cells(d)
        body += markup.table(head, cells, ident="cells")
        with _DRAW:
            chart = svg(api.plot_memory(d, None))
        body += f"<div class='chart' id='memory-chart'>{chart}</div>"
        profile = d.get("profile")
        if profile:  # one tolerance of a profile: k*(ε) over all of them, and the growth law
            growth = self.words(profile["growth"]["sentence"])
            body += f"<h3 id='growth'>k* by tolerance: {cell(growth)}</h3>"
            body += markup.table(*api.memory_profile_rows(profile), ident="profile")
            with _DRAW:
                chart = svg(api.plot_memory_profile(profile, d, None))
            body += f"<div class='chart' id='profile-chart'>{chart}</div>"
        ids = ",".join(map(str, a["run_ids"]))
        body += link("/compare", "compare the runs it rests on", run=ids, by="k")
        return chosen, body, None  # the answer's name is memory-…: no second "memory"

    def stress(self, q: dict):
        from seqbench.ui.charts import svg

        cols, rows = api.stress_rows(self.store)
        linked = [[link("/stress", r[0], run=r[0]), *r[1:]] for r in rows]
        body = markup.table(cols, linked, ident="stress", raw=(cols[0],))
        chosen = self._one(q, "run") or (str(rows[0][0]) if rows else "")
        if chosen:
            curves = api.stored_stress_curves(self.store, chosen)
            body += f"<h3>run {cell(chosen)}: {cell(curves.label)}</h3>"
            with _DRAW:
                chart = svg(api.stress_figure([curves]))
            body += f"<div class='chart' id='stress-chart'>{chart}</div>"
        return "Stress", body, None

    def checks(self, q: dict):
        with api.open_store(self.db, "lean") as reader:
            cols, rows = api.list_baselines(reader)
        names = [r[0] for r in rows]
        linked = [[link("/checks", r[0], baseline=r[0]), *r[1:]] for r in rows]
        body = markup.table(cols, linked, ident="baselines", raw=(cols[0],))
        chosen = self._one(q, "baseline") or (names[0] if names else "")
        if chosen:
            points = api.resolve_baseline(self.store, chosen)
            result = api.check(self.store, points)
            out = [[c.model, c.task, c.k, c.metric, c.baseline, c.current, c.tolerance,
                    f'<span class="status-{"completed" if c.status == "pass" else c.status}">'
                    f"{c.status}</span>", c.note] for c in result]  # fmt: skip
            head = ["model", "task", "k", "metric", "baseline", "current", "tolerance",
                    "status", "note"]  # fmt: skip
            summary = {s: sum(c.status == s for c in result) for s in api.CHECK_STATUSES}
            said = ", ".join(f"{n} {s}" for s, n in summary.items() if n)
            body += f"<h3>check against {html.escape(chosen)}: {said}</h3>"
            body += markup.table(head, out, ident="check", raw=("status",))
        return "Checks", body, None

    # -- routing --------------------------------------------------------------------------
    def page(self, path: str, q: dict) -> tuple[str, str, int | None]:
        if path == "/":
            return self.runs(q)
        if path.startswith("/run/"):
            return self.run(q, path.removeprefix("/run/"))
        pages = {
            "/compare": self.compare,
            "/curves": self.curves,
            "/sweeps": self.sweeps,
            "/sweep": self.sweep,
            "/memory": self.memory,
            "/stress": self.stress,
            "/checks": self.checks,
        }
        if path not in pages:
            raise NotFound(f"no page {path}")
        return pages[path](q)
