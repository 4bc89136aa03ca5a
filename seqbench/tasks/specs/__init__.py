"""The built-in tasks' specs, one file a task (or a family of tasks that share one, as the
pixel tasks do): each gives its TaskSpec (tasks/spec.py) as SPEC, or several as SPECS, with
the task's defaults, checks, own fields and resolution, torch-free. The Task itself is the
class its target names. seqbench.tasks collects every module here."""
