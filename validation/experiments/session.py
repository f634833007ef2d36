"""One run of ``lmnn-sdp experiments``: plan, run on Dask, tables, plots.

``experiments`` plans every (data set, split, method), skips the data sets whose files
are not fetched (saying which command fetches them), runs the rest through
``runner.run`` into the results store, writes the tables and the bar chart of every
task of the plan (finished now or in an earlier run) and the three illustrative figures
(``validation.experiments.figures``), and with ``export`` the tables as the records
``table1-NAME`` (``table1-quick-NAME`` with ``quick``), one per data set, with their task rows
(``report.export_datasets``), rewritten after every task the run records. An export is also
where a run starts from: its task rows go into the store first (``ResultStore.restore``),
so a run continued on another machine from the committed export computes only what the
export lacks. The figures' data are cached in the store under what
determines them (``figures.cache_key``), so a rerun with nothing left to compute redraws
them without fitting. A Ctrl-C raises ``Interrupted`` once the cluster is closed and the
run's claims released, with how many tasks the store holds. ``quick`` is the small version
for CI and newcomers: ``protocol.QUICK_SPLITS`` splits of stratified subsets of ``protocol.QUICK_ROWS``
rows, of ``protocol.QUICK_DATASETS`` unless data sets are named, of every method but
``protocol.QUICK_SKIPS`` unless methods are named, the gates on the built-in instances of at
most ``gate.QUICK_GATE_N`` points.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from validation.experiments import figures, plots, report, runner
from validation.experiments.gate import QUICK_GATE_N
from validation.experiments.methods import METHODS
from validation.experiments.protocol import (
    DATASETS,
    QUICK_DATASETS,
    QUICK_ROWS,
    QUICK_SKIPS,
    QUICK_SPLITS,
    missing_data,
)
from validation.experiments.store import DEFAULT_FOLDER, ResultStore
from validation.experiments.task import plan


class Interrupted(Exception):
    """A run stopped by Ctrl-C: ``finished`` of its ``total`` tasks are finished in the store
    at ``path``."""

    def __init__(self, finished: int, total: int, path: Path):
        super().__init__(f"interrupted: {finished} of {total} tasks finished in {path}")
        self.finished, self.total, self.path = finished, total, path


@dataclass
class Outcome:
    """What a run did: task counts (``runner.run``), files written, data sets skipped, and
    figures that could not be made (name -> error)."""

    counts: Counter
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    figure_errors: dict[str, str] = field(default_factory=dict)


def default_methods(quick: bool = False) -> list[str]:
    """Every registered method, without ``QUICK_SKIPS`` when ``quick``."""
    return [name for name in METHODS if not (quick and name in QUICK_SKIPS)]


def experiments(datasets: list[str] | None, methods: list[str] | None, *, splits: int | None = None,
                quick: bool = False, scheduler: str | None = None, workers: int = 2,
                results: Path = DEFAULT_FOLDER, report_dir: Path | None = None,
                progress: bool = True, make_figures: bool = True, export: Path | None = None,
                checkpoints: Path | None = None, checkpoint_interval: float = 60.0) -> Outcome:
    """Run the protocol (module docstring) on ``datasets`` (None: all, or ``QUICK_DATASETS``
    with ``quick``) and ``methods`` (None: all, or all but ``QUICK_SKIPS`` with ``quick``);
    ``results`` is the folder of the store (``results.sqlite``),
    ``report_dir`` that of the tables and plots (default ``results/report``), ``export`` that
    of the exported record (none by default), ``checkpoints`` that of the fits' checkpoints
    (default ``results/checkpoints``; on a cluster of several machines a folder every worker
    reaches), saved every ``checkpoint_interval`` seconds. Raises ``Interrupted`` on Ctrl-C."""
    if datasets is None:
        datasets = list(QUICK_DATASETS if quick else DATASETS)
    if methods is None:
        methods = default_methods(quick)
    skipped = [message for message in map(missing_data, datasets) if message]
    datasets = [name for name in datasets if missing_data(name) is None]
    max_rows = QUICK_ROWS if quick else None
    tasks = plan(datasets, methods, splits or (QUICK_SPLITS if quick else None), max_rows)
    report_dir = Path(report_dir) if report_dir else Path(results) / "report"
    path = Path(results) / "results.sqlite"
    prefix = "table1-quick" if quick else "table1"
    try:
        with ResultStore(path) as store, runner.dask_client(scheduler, workers) as client:
            saving = {"checkpoints": str(Path(checkpoints or Path(results) / "checkpoints").absolute()),
                      "checkpoint_interval": checkpoint_interval}
            on_record = None
            if export is not None:
                for name in datasets:
                    store.restore(report.read_tasks(report.tasks_path(export, prefix, name)))
                on_record = lambda task: _export(store, [task.dataset], max_rows, export, prefix)  # noqa: E731
            counts = runner.run(tasks, store, client, progress, QUICK_GATE_N if quick else None, saving,
                                on_record)
            rows = store.rows(task.key for task in tasks)
            outcome = Outcome(counts, report.write_tables(rows, report_dir), skipped)
            lines = [line for line in report.summarise(rows) if line["splits"]]
            if lines:
                outcome.written.append(plots.table_bars(lines, report_dir / "table1-bars.png"))
            if export is not None:
                outcome.written += _export(store, datasets, max_rows, export, prefix)
            if make_figures:
                _figures(client, store, datasets, max_rows, report_dir, outcome)
    except KeyboardInterrupt:
        with ResultStore(path) as store:
            finished = len(store.finished(task.key for task in tasks))
        raise Interrupted(finished, len(tasks), path) from None
    return outcome


def _export(store: ResultStore, datasets: list[str], max_rows: int | None, directory: Path,
            prefix: str) -> list[Path]:
    """``report.export_datasets`` of every row the store holds for ``datasets`` at ``max_rows``
    (this run's, earlier runs' and those restored from the export, of any code version)."""
    rows = [row for row in store.rows() if row["dataset"] in datasets
            and json.loads(row["params"])["data"]["max_rows"] == max_rows]
    return report.export_datasets(rows, directory, prefix)


def _figures(client, store: ResultStore, datasets: list[str], max_rows: int | None, directory: Path,
             outcome: Outcome) -> None:
    """Draw the figures from the store's cache, or fit their models on the cluster and cache
    them first; a failure is noted, not raised."""
    jobs = figures.jobs(datasets, max_rows)
    keys = {name: figures.cache_key(name, job) for name, job in jobs.items()}
    cached = {name: store.figure(name, keys[name]) for name in jobs}
    futures = {name: client.submit(job[0], *job[1:], pure=False) for name, job in jobs.items()
               if cached[name] is None}
    for name in jobs:
        try:
            data = cached[name]
            if data is None:
                data = futures[name].result()
                store.record_figure(name, keys[name], data)
            detail = f"{datasets[0]}, split 0" if name == "convergence" else ""
            outcome.written.append(figures.draw(name, data, directory, detail))
        except Exception as error:  # a figure is an illustration; the tables stand without it
            outcome.figure_errors[name] = repr(error)
