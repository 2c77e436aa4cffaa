"""Experiment file (TOML) -> validated ``Experiment``. Every error names the file, the line and the key."""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Mapping

from maximus import limits, system
from maximus.driver.hosts import check_shares
from maximus.driver.schedule import ARRIVALS
from maximus.engines import Engine, engine_class, runnable_engine
from maximus.errors import UserError
from maximus.experiment.model import CrashTests, Experiment, Hygiene, LoadPolicy, Order, Step, Workload
from maximus.experiment.model import from_data as model_from_data
from maximus.experiment.plan import planned_runs
from maximus.knobs import KnobCatalogue
from maximus.records import MAX_FAILED_PERCENT, ExperimentRecord
from maximus.workloads import workload as workload_named
from maximus.workloads.base import SettingError
from maximus.workloads.base import Workload as WorkloadType

_TOP = {"name", "description", "engine", "clients", "repeats", "order", "seed", "workload", "hygiene",
        "baseline", "steps", "system_changes", "crashtest", "rates", "arrivals",
        "hosts"}
_WORKLOAD = {"name", "warmup", "duration", "max_failed"}  # every other key is the workload's own setting
_HYGIENE = {"load", "restore", "drop_caches"}
_STEP = {"name", "set", "multi"}
_CRASHTEST = {"mode", "crashes", "warmup", "duration"}
_CRASH_MODES = ("process", "power")


class _Source:
    """The file's text, to turn a key path into ``file:line: key: message``."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines = path, text.splitlines()

    def error(self, where: tuple, message: str) -> UserError:
        return UserError(f"{self.path}:{self._line(where)}: {_dotted(where)}: {message}")

    def _line(self, where: tuple) -> int:
        start, end = self._section(where)
        key = next((part for part in reversed(where) if isinstance(part, str)), None)
        if key is not None:
            pattern = re.compile(rf"(^|[{{,\s]){re.escape(key)}\s*=")
            for number in range(start, end):
                if pattern.search(self.lines[number]):
                    return number + 1
        return start + 1 if start < len(self.lines) else 1

    def _section(self, where: tuple) -> tuple[int, int]:
        """The line range of the table ``where`` points into: [workload], the n-th [[steps]], or the top."""
        headers = [(n, line.strip()) for n, line in enumerate(self.lines) if line.strip().startswith("[")]
        wanted = None
        if len(where) >= 2 and where[0] == "steps" and isinstance(where[1], int):
            steps = [n for n, text in headers if text.startswith("[[steps]]")]
            wanted = steps[where[1]] if where[1] < len(steps) else None
        elif len(where) >= 2 and where[0] in ("workload", "hygiene", "baseline", "crashtest"):
            wanted = next((n for n, text in headers if text == f"[{where[0]}]"), None)
        if wanted is None:
            return 0, headers[0][0] if headers else len(self.lines)
        following = [n for n, _ in headers if n > wanted]
        return wanted, following[0] if following else len(self.lines)


def _dotted(where: tuple) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(file)"


def load_experiment(path: Path) -> Experiment:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read experiment file {path}: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:  # TOML is UTF-8
        raise UserError(f"{path}: not UTF-8 text (byte {error.start}: {data[error.start:error.end]!r}): save the "
                        "file as UTF-8") from None
    return parse_experiment(text, path)


def parse_experiment(text: str, path: Path = Path("<experiment>")) -> Experiment:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML: {error}") from None
    source = _Source(path, text)
    _known_keys(source, (), data, _TOP)
    engine = _engine_name(source, data)
    steps, clients = _steps(source, data, engine), _clients(source, data)
    _servable(source, engine, steps, clients)
    experiment = Experiment(
        name=_text(source, data, ("name",), required=True),
        description=_text(source, data, ("description",)),
        engine=engine,
        steps=steps,
        clients=clients,
        repeats=_integer(source, data, ("repeats",), 2, limits.REPEATS),
        order=_choice(source, data, ("order",), Order, Order.INTERLEAVED),
        seed=_integer(source, data, ("seed",), 1, limits.SEED),
        workload=_workload(source, data.get("workload", {})),
        hygiene=_hygiene(source, data.get("hygiene", {})),
        system_changes=_boolean(source, data, ("system_changes",), False),
        crash_tests=_crash_tests(source, data.get("crashtest"), steps),
        rates=_rates(source, data),
        arrivals=_arrivals(source, data),
        hosts=_integer(source, data, ("hosts",), 1, limits.HOSTS),
    )
    chosen = workload_named(experiment.workload.name)
    if experiment.rates and chosen.pauses(chosen.settings(experiment.workload.settings)):
        raise source.error(("rates",), f"a fixed rate sets when each transaction starts: the "
                           f"{experiment.workload.name} workload's keying and think times would too (leave them off)")
    if experiment.hosts > 1:
        _hosted(source, experiment, chosen)
    if experiment.crash_tests and not chosen.crash_testable:
        raise source.error(("crashtest",), f"the {experiment.workload.name} workload keeps no success log: it has no "
                           "crash test")
    _plannable(source, experiment)
    return experiment


def _plannable(source: _Source, experiment: Experiment) -> None:
    """A plan of a size a results database holds, with seeds it can store (repeat r uses seed + r - 1)."""
    size = planned_runs(experiment)
    if size > limits.LARGEST_PLAN:
        rates = f"{len(experiment.rates)} rate(s) × " if experiment.rates else ""
        raise source.error(("repeats",), f"{len(experiment.steps)} configuration(s) × {len(experiment.clients)} "
                           f"client count(s) × {rates}{experiment.repeats} repeats make {size:,} runs, more than the "
                           f"{limits.LARGEST_PLAN:,} an experiment may plan")
    if experiment.seed + experiment.repeats - 1 > limits.LARGEST_INTEGER:
        raise source.error(("seed",), f"the last repeat's seed, seed + repeats - 1, would pass "
                           f"{limits.LARGEST_INTEGER:,}")


def _known_keys(source: _Source, where: tuple, table: Any, known: set[str]) -> None:
    if not isinstance(table, dict):
        raise source.error(where, "expected a table")
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {close[0]}?" if close else f" (expected one of {', '.join(sorted(known))})"
            raise source.error((*where, key), f"unknown key{hint}")


def _get(data: Mapping, where: tuple) -> Any:
    value: Any = data
    for part in where:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _text(source: _Source, data: Mapping, where: tuple, default: str = "", required: bool = False) -> str:
    value = _get(data, where)
    if value is None:
        if required:
            raise source.error(where, "is required")
        return default
    if not isinstance(value, str) or (required and not value.strip()):
        raise source.error(where, "expected a non-empty string")
    return value


def _integer(source: _Source, data: Mapping, where: tuple, default: int, limit: limits.Limit) -> int:
    return int(_within(source, data, where, default, limit))


def _number(source: _Source, data: Mapping, where: tuple, default: float, limit: limits.Limit) -> float:
    return float(_within(source, data, where, default, limit))


def _within(source: _Source, data: Mapping, where: tuple, default: float, limit: limits.Limit) -> float:
    """The number at ``where``, or ``default``; TOML's nan and inf are numbers too, and refused like any other
    outside the documented range."""
    value = _get(data, where)
    if value is None:
        return default
    if not limit.allows(value):
        raise source.error(where, f"expected {limit.describe()}, got {value!r}")
    return value


def _boolean(source: _Source, data: Mapping, where: tuple, default: bool) -> bool:
    value = _get(data, where)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise source.error(where, f"expected true or false, got {value!r}")
    return value


def _choice(source: _Source, data: Mapping, where: tuple, kind: type[StrEnum], default: Any) -> Any:
    value = _get(data, where)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        raise source.error(where, f"expected one of {', '.join(v.value for v in kind)}, got {value!r}") from None


def _engine_name(source: _Source, data: Mapping) -> str:
    name = _text(source, data, ("engine",), "sqlite")
    try:
        runnable_engine(name)
    except UserError as error:
        raise source.error(("engine",), str(error)) from None
    return name


def _clients(source: _Source, data: Mapping) -> tuple[int, ...]:
    value = data.get("clients", [2])
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value or not all(limits.TERMINALS.allows(v) for v in value):
        raise source.error(("clients",), "expected a list of client counts such as [20, 40, 60], each "
                           f"{limits.TERMINALS.describe()}")
    if len(set(value)) != len(value):
        raise source.error(("clients",), "a client count appears twice")
    return tuple(value)


def _hosted(source: _Source, experiment: Experiment, chosen: WorkloadType) -> None:
    """Several client hosts share each run's terminals by their homes: every client count must give each host one."""
    homes = chosen.homes(chosen.settings(experiment.workload.settings))
    for clients in experiment.clients:
        try:
            check_shares(clients, experiment.hosts, homes)
        except UserError as error:
            raise source.error(("hosts",), f"at {clients} clients: {error}") from None


def _rates(source: _Source, data: Mapping) -> tuple[float, ...]:
    """A rate sweep's fixed throughputs (issue #45), in the file's order; none: the experiment runs closed loop."""
    value = data.get("rates")
    if value is None:
        return ()
    if not isinstance(value, list) or not value or not all(limits.RATE.allows(v) for v in value):
        raise source.error(("rates",), "expected a list of transactions per second over all terminals such as "
                           f"[100, 200, 400], each {limits.RATE.describe()}")
    if len(set(value)) != len(value):
        raise source.error(("rates",), "a rate appears twice")
    return tuple(float(rate) for rate in value)


def _arrivals(source: _Source, data: Mapping) -> str:
    value = data.get("arrivals")
    if value is None:
        return "regular"
    if "rates" not in data:
        raise source.error(("arrivals",), "says how a fixed rate's transactions arrive: give the rates too, e.g. "
                           "rates = [100, 200, 400]")
    if value not in ARRIVALS:
        raise source.error(("arrivals",), f"expected one of {', '.join(ARRIVALS)}, got {value!r}")
    return value


def _workload(source: _Source, table: Any) -> Workload:
    if not isinstance(table, dict):
        raise source.error(("workload",), "expected a table")
    wrapped = {"workload": table}
    name = _text(source, wrapped, ("workload", "name"), "tpcc")
    try:
        chosen = workload_named(name)
    except UserError as error:
        raise source.error(("workload", "name"), str(error)) from None
    _known_keys(source, ("workload",), table, _WORKLOAD | set(chosen.setting_names))
    try:
        settings = chosen.settings({key: value for key, value in table.items() if key not in _WORKLOAD})
    except SettingError as error:
        raise source.error(("workload", error.key), error.reason) from None
    return Workload(name, settings.to_mapping(),
                    _number(source, wrapped, ("workload", "warmup"), 5.0, limits.WARMUP_S),
                    _number(source, wrapped, ("workload", "duration"), 30.0, limits.DURATION_S),
                    _number(source, wrapped, ("workload", "max_failed"), MAX_FAILED_PERCENT, limits.PERCENT))


def _hygiene(source: _Source, table: Any) -> Hygiene:
    _known_keys(source, ("hygiene",), table, _HYGIENE)
    wrapped = {"hygiene": table}
    return Hygiene(_choice(source, wrapped, ("hygiene", "load"), LoadPolicy, LoadPolicy.PER_STEP),
                   _boolean(source, wrapped, ("hygiene", "restore"), True),
                   _boolean(source, wrapped, ("hygiene", "drop_caches"), False))


def _crash_tests(source: _Source, table: Any, steps: tuple[Step, ...]) -> CrashTests | None:
    """``[crashtest]``: each step crashed ``crashes`` times in each mode after the measured runs; a power cut stands
    for the disk itself, so no step of a power-mode test puts its database on a storage layout of its own."""
    if table is None:
        return None
    _known_keys(source, ("crashtest",), table, _CRASHTEST)
    wrapped = {"crashtest": table}
    modes = table.get("mode", "process")
    modes = [modes] if isinstance(modes, str) else modes
    if not isinstance(modes, list) or not modes or any(mode not in _CRASH_MODES for mode in modes) \
            or len(set(modes)) != len(modes):
        raise source.error(("crashtest", "mode"), f"expected process, power or a list of both, got {modes!r}")
    if "power" in modes:
        for index, step in enumerate(steps):
            layout = sorted(name for name in step.knobs if name.startswith("storage."))
            if layout:
                raise source.error(("crashtest", "mode"), f"a power cut stands for the disk itself, but step "
                                   f"{step.name!r} puts its database on a storage layout ({', '.join(layout)}): "
                                   "use mode = \"process\" for it")
    return CrashTests(tuple(modes), _integer(source, wrapped, ("crashtest", "crashes"), 1, limits.CRASHES),
                      _number(source, wrapped, ("crashtest", "warmup"), 1.0, limits.WARMUP_S),
                      _number(source, wrapped, ("crashtest", "duration"), 5.0, limits.DURATION_S))


def _resolve(source: _Source, where: tuple, engine: str, settings: Any,
             previous: Mapping[str, str] | None = None) -> dict[str, str]:
    """``settings`` validated by the catalogue of the server they configure with the ``previous`` knobs, and
    the ``previous`` knobs they keep by the same catalogue: a step that changes ``bin_dir`` runs another
    version of the server, which may lack a setting, or a value, an earlier step chose."""
    if not isinstance(settings, dict):
        raise source.error(where, "expected a table of knob = value")
    previous = system.split(previous or {})[0]  # the operating system's knobs are checked once, when set
    catalogue = _catalogue(source, where, engine, {**previous, **system.split(settings)[0]})
    _check_kept(source, where, catalogue, {name: value for name, value in previous.items() if name not in settings})
    resolved = {}
    for name, value in settings.items():
        if isinstance(value, (dict, list)):
            raise source.error((*where, name), "expected a single value")
        knob = system.OS.get if system.is_os_knob(name) else catalogue.get
        try:
            resolved[name] = knob(name).parse(str(value).lower() if isinstance(value, bool) else value)
        except UserError as error:
            raise source.error((*where, name), str(error)) from None
    return resolved


def _check_kept(source: _Source, where: tuple, catalogue: KnobCatalogue, kept: Mapping[str, str]) -> None:
    for name, value in kept.items():
        if name not in catalogue:
            raise source.error(where, f"{name} = {value}, kept from an earlier step, is not a setting of this "
                                      f"step's {catalogue.engine} server")
        try:
            catalogue.get(name).parse(value)
        except UserError as error:
            raise source.error(where, f"{name} = {value}, kept from an earlier step: {error}") from None


def _catalogue(source: _Source, where: tuple, engine: str, knobs: Mapping[str, object]) -> KnobCatalogue:
    try:
        return engine_class(engine).catalogue_for(knobs, {})
    except UserError as error:  # a knob that chooses the server (bin_dir) names none
        raise source.error(where, str(error)) from None


def _steps(source: _Source, data: Mapping, engine: str) -> tuple[Step, ...]:
    baseline = _resolve(source, ("baseline",), engine, data.get("baseline", {}))
    steps = [Step("baseline", baseline, baseline)]
    raw_steps = data.get("steps", [])
    if not isinstance(raw_steps, list):
        raise source.error(("steps",), "expected [[steps]] tables")
    for index, raw in enumerate(raw_steps):
        steps.append(_step(source, index, raw, engine, steps[-1]))
    names = [step.name for step in steps]
    for index, name in enumerate(names[1:]):
        if names.count(name) > 1:
            raise source.error(("steps", index, "name"), f"step name {name!r} is used twice")
    return tuple(steps)


def _step(source: _Source, index: int, raw: Any, engine: str, previous: Step) -> Step:
    where = ("steps", index)
    _known_keys(source, where, raw, _STEP)
    name = _step_name(source, where, raw)
    if "set" not in raw or not raw["set"]:
        raise source.error((*where, "set"), "a step must set at least one knob, e.g. set = { page_size = 8192 }")
    changes = _resolve(source, (*where, "set"), engine, raw["set"], previous.knobs)
    engine_knobs, os_knobs = system.split(previous.knobs)
    before = {**_catalogue(source, where, engine, engine_knobs).with_defaults(engine_knobs),
              **{name: os_knobs.get(name, "the machine's") for name in system.split(changes)[1]}}
    unchanged = [knob for knob, value in changes.items() if before[knob] == value]
    if unchanged:
        raise source.error((*where, "set", unchanged[0]),
                           f"sets {unchanged[0]} to {changes[unchanged[0]]}, which the previous step already has")
    multi = raw.get("multi", False)
    if not isinstance(multi, bool):
        raise source.error((*where, "multi"), f"expected true or false, got {multi!r}")
    if len(changes) > 1 and not multi:
        raise source.error((*where, "set"), f"changes {len(changes)} variables ({', '.join(changes)}): change one "
                           "variable per step, or mark the step multi = true")
    return Step(name, changes, {**previous.knobs, **changes}, multi, {knob: before[knob] for knob in changes})


def _servable(source: _Source, engine: str, steps: tuple[Step, ...], clients: tuple[int, ...]) -> None:
    """Knob combinations the engine cannot serve at a client count, or that name no storage layout or process Maximus
    can make, fail now, not in the middle of the night: each step is checked as deep as a run's ``-k`` is."""
    for index, step in enumerate(steps):
        where = ("baseline",) if index == 0 else ("steps", index - 1, "set")
        try:
            _placeable(_served(engine, step), system.OS.resolve(system.split(step.knobs)[1]))
        except UserError as error:
            raise source.error(where, str(error)) from None
        for count in clients:
            try:
                _served(engine, step).validate_run(count)  # a fresh engine each: one completes its knobs for them
            except UserError as error:
                raise source.error(where, f"with {count} clients: {error}") from None


def _served(engine: str, step: Step) -> Engine:
    return engine_class(engine)(Path("."), "validation", system.split(step.knobs)[0])


def _placeable(engine: Engine, os_knobs: Mapping[str, str]) -> None:
    """What a run checks of its operating-system knobs before it starts (``runs.run_benchmark``): the storage layout
    the ``storage.*`` knobs name, and ``server.*`` knobs and throttles only where Maximus runs the engine's server."""
    system.check_changes(os_knobs, engine)


def _step_name(source: _Source, where: tuple, raw: Mapping) -> str:
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise source.error((*where, "name"), "every step needs a name, e.g. name = \"page size 8K\"")
    if name == "baseline":
        raise source.error((*where, "name"), "'baseline' is the name of the [baseline] configuration")
    return name


def stored_experiment(record: ExperimentRecord) -> Experiment:
    """The experiment exactly as it was planned: the resolved model stored with its plan, or for one stored
    before Maximus kept that, parsed from the stored text, with stored overrides."""
    if "model" in record.plan:
        return model_from_data(record.plan["model"])
    experiment = parse_experiment(record.source_text, Path(record.source_path))
    stored = record.plan.get("experiment", {})
    return _apply(experiment, stored) if stored else experiment


def stored_overrides(experiment: Experiment) -> dict:
    """What the command line may override (e.g. the demo's duration), so a resume plans the same runs."""
    return {"duration_s": experiment.workload.duration_s, "warmup_s": experiment.workload.warmup_s}


def _apply(experiment: Experiment, stored: dict) -> Experiment:
    workload = replace(experiment.workload, duration_s=stored["duration_s"], warmup_s=stored["warmup_s"])
    return replace(experiment, workload=workload)
