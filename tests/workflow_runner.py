"""Runs a GitHub Actions job's steps here, in order, as a hosted runner would.

What it simulates: the matrix (one job per combination), ``${{ }}`` expressions over the
``matrix``, ``steps``, ``needs``, ``env``, ``github``, ``runner`` and ``secrets`` contexts
(with ``always()``, ``success()``, ``failure()``, ``cancelled()`` and ``hashFiles()``),
workflow, job and step ``env``, ``if:``, ``continue-on-error``, ``working-directory``, and
the files a runner hands every step: ``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_PATH``,
``GITHUB_STEP_SUMMARY``, in ``RUNNER_TEMP`` and ``GITHUB_WORKSPACE`` folders of its own.
``run:`` steps run in ``bash --noprofile --norc -eo pipefail``, GitHub's default shell.
``uses: actions/*`` steps are stubbed: checkout and setup-python do nothing (the test
prepares the workspace and the interpreter), the artifact actions copy folders through
one store shared by the jobs of a run, the cache actions miss. A composite action the
test names (``actions``: ``owner/name`` -> its folder, e.g. canary's own ``action.yml``)
runs its steps in order with its ``inputs`` (defaults, then ``with:``), ``steps`` of its
own, ``github.action_path`` and ``GITHUB_ACTION_PATH``, and sets the step's outputs from
its ``outputs``. Any other action is an error: a step the simulation does not know is not
silently skipped.

What it cannot show: anything GitHub itself decides (runner images, permissions applied
to the token, action versions). actionlint covers the syntax; this covers the shell.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>\d+(?:\.\d+)?)"
    r"|(?P<op>==|!=|&&|\|\||<=|>=|[!(),<>])"
    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[\w*-]+)*))"
)
_FUNCTIONS = {"always", "success", "failure", "cancelled", "hashFiles", "contains", "format"}


def load_workflow(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text("utf-8"))
    if True in data:  # YAML 1.1 reads the bare key `on` as True
        data["on"] = data.pop(True)
    return data


@dataclass
class StepRun:
    name: str
    outcome: str  # success, failure or skipped
    conclusion: str  # success where continue-on-error forgave a failure
    output: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class JobRun:
    job: str
    matrix: dict[str, Any]
    steps: list[StepRun] = field(default_factory=list)
    summary: str = ""
    result: str = "success"  # success, failure or skipped

    def step(self, name: str) -> StepRun:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"no step named {name!r}: {[s.name for s in self.steps]}")

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.name} [{s.outcome}]\n{s.output}" for s in self.steps)


class Runner:
    """One workflow run: ``run_job`` each job in the order GitHub would (needs first)."""

    def __init__(
        self,
        workflow: Path,
        root: Path,
        make_workspace: Callable[[Path], None],
        *,
        environ: Mapping[str, str],  # the runner's own; "$GITHUB_WORKSPACE" is expanded
        github: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        actions: Mapping[str, Path] | None = None,  # composite actions: "owner/name" -> folder
    ) -> None:
        self.workflow = load_workflow(workflow)
        self.root = root  # the run's scratch folder: artifacts, one folder per job
        self.make_workspace = make_workspace  # called with a fresh folder: a checkout
        self.environ = dict(environ)
        self.github = {
            "repository": "example/canary",
            "run_id": "4242",
            "server_url": "https://github.example",
            "event_name": "schedule",
            "ref": "refs/heads/main",
            "token": "fake-actions-token",
            "sha": "c0ffee" + "0" * 34,
            **(github or {}),
        }
        self.secrets = {"GITHUB_TOKEN": "fake-actions-token", **(secrets or {})}
        self.artifacts = root / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.results: dict[str, list[JobRun]] = {}
        self.actions = dict(actions or {})
        self._jobs_started = 0

    def run_job(self, name: str, matrix: Mapping[str, list[Any]] | None = None) -> list[JobRun]:
        """Every matrix combination of job ``name`` (``matrix`` replaces the workflow's
        values per key, e.g. a toy package for ``[transformers, trl, peft]``)."""
        job = self.workflow["jobs"][name]
        axes = dict(job.get("strategy", {}).get("matrix", {}))
        for key in ("include", "exclude"):
            assert key not in axes, f"the simulation does not expand matrix {key}"
        axes.update(matrix or {})
        keys = list(axes)
        combos = [
            dict(zip(keys, values, strict=True)) for values in itertools.product(*axes.values())
        ] or [{}]
        runs = [self._run_one(name, job, combo) for combo in combos]
        self.results[name] = runs
        return runs

    # -- one job ---------------------------------------------------------------------

    def _run_one(self, name: str, job: Mapping[str, Any], matrix: dict[str, Any]) -> JobRun:
        self._jobs_started += 1
        base = self.root / f"job-{self._jobs_started}-{name}"
        workspace, temp = base / "workspace", base / "temp"
        workspace.mkdir(parents=True)
        temp.mkdir()
        self.make_workspace(workspace)
        run = JobRun(name, matrix)
        context: dict[str, Any] = {
            "matrix": matrix,
            "steps": {},
            "needs": self._needs(job),
            "github": {**self.github, "workspace": str(workspace)},
            "runner": {"temp": str(temp), "os": "Linux"},
            "secrets": self.secrets,
            "env": {},
        }
        if not _truthy(self._evaluate(job.get("if", "success()"), context, run, job_level=True)):
            run.result = "skipped"
            return run
        env: dict[str, str] = {}
        for scope in (self.workflow.get("env", {}), job.get("env", {})):
            for key, value in scope.items():
                env[key] = self._interpolate(str(value), {**context, "env": env}, run)
        extra_path: list[str] = []
        for index, step in enumerate(job.get("steps", [])):
            step_name = step.get("name") or step.get("uses") or f"step {index + 1}"
            context["env"] = dict(env)
            condition = step.get("if", "success()")
            if not _truthy(self._evaluate(condition, context, run)):
                run.steps.append(StepRun(step_name, "skipped", "skipped"))
                continue
            step_env = dict(env)
            for key, value in step.get("env", {}).items():
                step_env[key] = self._interpolate(str(value), context, run)
            files = {
                "GITHUB_OUTPUT": temp / f"output-{index}",
                "GITHUB_ENV": temp / f"env-{index}",
                "GITHUB_PATH": temp / f"path-{index}",
                "GITHUB_STEP_SUMMARY": temp / f"summary-{index}",
            }
            for file in files.values():
                file.write_text("")
            if "run" in step:
                outcome, output = self._shell(
                    step,
                    context=context,
                    run=run,
                    step_env=step_env,
                    files=files,
                    extra_path=extra_path,
                )
            else:
                outcome, output = self._action(
                    step, context, run, workspace, files["GITHUB_OUTPUT"]
                )
            outputs = _step_outputs(step, files["GITHUB_OUTPUT"])
            env.update(_read_outputs(files["GITHUB_ENV"].read_text()))
            extra_path[:0] = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p]
            run.summary += files["GITHUB_STEP_SUMMARY"].read_text()
            forgiven = outcome == "failure" and _truthy(step.get("continue-on-error", False))
            conclusion = "success" if forgiven else outcome
            run.steps.append(StepRun(step_name, outcome, conclusion, output, outputs))
            if "id" in step:
                context["steps"][step["id"]] = {
                    "outputs": outputs,
                    "outcome": outcome,
                    "conclusion": conclusion,
                }
        failed = any(step.conclusion == "failure" for step in run.steps)
        run.result = "failure" if failed else "success"
        return run

    def _needs(self, job: Mapping[str, Any]) -> dict[str, Any]:
        needs = job.get("needs", [])
        names = [needs] if isinstance(needs, str) else list(needs)
        found = {}
        for name in names:
            assert name in self.results, f"run job {name} first: this job needs it"
            runs = self.results[name]
            result = "failure" if any(r.result == "failure" for r in runs) else "success"
            found[name] = {"result": result, "outputs": {}}
        return found

    def _shell(
        self,
        step: Mapping[str, Any],
        *,
        context: Mapping[str, Any],
        run: JobRun,
        step_env: Mapping[str, str],
        files: Mapping[str, Path],
        extra_path: list[str],
    ) -> tuple[str, str]:
        assert step.get("shell", "bash") == "bash", "the simulation runs bash steps only"
        script = self._interpolate(step["run"], context, run)
        temp = Path(context["runner"]["temp"])
        script_file = temp / f"step-{len(run.steps)}.sh"
        script_file.write_text(script)
        workspace = Path(context["github"]["workspace"])
        cwd = workspace / step.get("working-directory", ".")
        runner_env = {
            k: v.replace("$GITHUB_WORKSPACE", str(workspace)) for k, v in self.environ.items()
        }
        environ = {
            **runner_env,
            **step_env,
            **{key: str(path) for key, path in files.items()},
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_TEMP": str(temp),
            "RUNNER_OS": "Linux",
            "GITHUB_REPOSITORY": self.github["repository"],
            "GITHUB_RUN_ID": self.github["run_id"],
            "GITHUB_SERVER_URL": self.github["server_url"],
            "GITHUB_EVENT_NAME": self.github["event_name"],
        }
        environ["PATH"] = os.pathsep.join([*extra_path, runner_env["PATH"]])
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
            cwd=cwd,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
        )
        return ("success" if done.returncode == 0 else "failure"), done.stdout + done.stderr

    def _action(
        self,
        step: Mapping[str, Any],
        context: Mapping[str, Any],
        run: JobRun,
        workspace: Path,
        output_file: Path | None = None,
    ) -> tuple[str, str]:
        action = step["uses"].split("@", 1)[0]
        inputs = {
            k: self._interpolate(str(v), context, run) for k, v in step.get("with", {}).items()
        }
        if action in self.actions:
            assert output_file is not None, "a composite action inside a composite action"
            label = step.get("name") or step["uses"]
            folder = self.actions[action]
            return self._composite(
                folder, label, inputs, context=context, run=run, output_file=output_file
            )
        if action in {"actions/checkout", "actions/setup-python", "actions/cache/save"}:
            return "success", f"stub: {action}"
        if action == "actions/cache/restore":
            return "success", "stub: cache miss"
        if action == "actions/upload-artifact":
            return self._upload(inputs, workspace)
        if action == "actions/download-artifact":
            source = self.artifacts / inputs["name"]
            if not source.is_dir():
                return "failure", f"Artifact not found for name: {inputs['name']}"
            shutil.copytree(source, workspace / inputs.get("path", "."), dirs_exist_ok=True)
            return "success", f"downloaded {inputs['name']}"
        raise AssertionError(f"the simulation has no stub for {step['uses']}")

    def _composite(
        self,
        folder: Path,
        label: str,
        given: Mapping[str, str],
        *,
        context: Mapping[str, Any],
        run: JobRun,
        output_file: Path,
    ) -> tuple[str, str]:
        """A composite action's steps, as the runner runs them inside the calling step: their
        summaries go to the job's, their step results are listed as ``<the step's name>:
        <the action step's name>``."""
        spec = load_workflow(folder / "action.yml")
        assert spec["runs"]["using"] == "composite", "the simulation runs composite actions"
        declared = spec.get("inputs", {})
        unknown = sorted(set(given) - set(declared))
        assert not unknown, f"{folder.name}/action.yml has no input {unknown[0]!r}"
        inputs = {name: str(entry.get("default", "")) for name, entry in declared.items()}
        inputs.update(given)
        missing = [n for n, e in declared.items() if e.get("required") and not inputs[n]]
        if missing:
            return "failure", f"Input required and not supplied: {missing[0]}"
        inner = JobRun(f"{run.job}/{folder.name}", run.matrix)
        scope: dict[str, Any] = {
            **context,
            "inputs": inputs,
            "steps": {},
            "github": {**context["github"], "action_path": str(folder)},
        }
        temp = Path(context["runner"]["temp"])
        extra_path: list[str] = []
        for index, step in enumerate(spec["runs"]["steps"]):
            name = step.get("name") or step.get("uses") or f"step {index + 1}"
            if not _truthy(self._evaluate(step.get("if", "success()"), scope, inner)):
                inner.steps.append(StepRun(name, "skipped", "skipped"))
                continue
            files = {
                key: temp / f"{key.lower()}-{folder.name}-{len(run.steps)}-{index}"
                for key in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
            }
            for file in files.values():
                file.write_text("")
            if "run" in step:
                assert "shell" in step, f"{name}: a composite action's run step needs shell"
                step_env = {k: self._interpolate(str(v), scope, inner) for k, v in
                            step.get("env", {}).items()}  # fmt: skip
                step_env = {**scope["env"], **step_env, "GITHUB_ACTION_PATH": str(folder)}
                outcome, output = self._shell(
                    step,
                    context=scope,
                    run=inner,
                    step_env=step_env,
                    files=files,
                    extra_path=extra_path,
                )
            else:
                workspace = Path(context["github"]["workspace"])
                outcome, output = self._action(step, scope, inner, workspace)
            outputs = _step_outputs(step, files["GITHUB_OUTPUT"])
            extra_path[:0] = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p]
            run.summary += files["GITHUB_STEP_SUMMARY"].read_text()
            inner.steps.append(StepRun(name, outcome, outcome, output, outputs))
            if "id" in step:
                scope["steps"][step["id"]] = {
                    "outputs": outputs,
                    "outcome": outcome,
                    "conclusion": outcome,
                }
        declared_outputs = spec.get("outputs", {})
        with output_file.open("a") as out:
            for key, entry in declared_outputs.items():
                out.write(f"{key}={self._interpolate(str(entry['value']), scope, inner)}\n")
        run.steps += [
            StepRun(f"{label}: {s.name}", s.outcome, s.conclusion, s.output, s.outputs)
            for s in inner.steps
        ]
        failed = any(s.outcome == "failure" for s in inner.steps)
        return ("failure" if failed else "success"), "\n".join(s.output for s in inner.steps)

    def _upload(self, inputs: Mapping[str, str], workspace: Path) -> tuple[str, str]:
        source = workspace / inputs["path"]
        if not source.exists():
            if inputs.get("if-no-files-found", "warn") == "error":
                return "failure", f"no files at {inputs['path']}"
            return "success", f"warning: no files at {inputs['path']}"
        target = self.artifacts / inputs["name"]
        shutil.rmtree(target, ignore_errors=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            target.mkdir(parents=True)
            shutil.copy2(source, target / source.name)
        return "success", f"uploaded {inputs['name']}"

    # -- expressions -----------------------------------------------------------------

    def _interpolate(self, text: str, context: Mapping[str, Any], run: JobRun) -> str:
        return _EXPRESSION.sub(lambda m: _text(self._evaluate(m.group(1), context, run)), text)

    def _evaluate(
        self, expression: Any, context: Mapping[str, Any], run: JobRun, *, job_level: bool = False
    ) -> Any:
        if not isinstance(expression, str):
            return expression
        expression = expression.strip()
        if expression.startswith("${{") and expression.endswith("}}"):
            expression = expression[3:-2]
        failed = any(step.conclusion == "failure" for step in run.steps)
        if job_level:
            failed = any(need["result"] == "failure" for need in context["needs"].values())

        def lookup(path: str) -> Any:
            value: Any = context
            for part in path.split("."):
                if not isinstance(value, Mapping) or part not in value:
                    return ""  # GitHub: null, which reads as ''
                value = value[part]
            return value

        functions = {
            "always": lambda: True,
            "success": lambda: not failed,
            "failure": lambda: failed,
            "cancelled": lambda: False,
            "hashFiles": lambda *patterns: "0" * 64,
            "contains": lambda haystack, needle: str(needle).lower() in str(haystack).lower(),
            "format": lambda template, *args: template.format(*args),
        }
        python = _to_python(expression)
        return eval(python, {"__builtins__": {}}, {"_get": lookup, **functions})


def _to_python(expression: str) -> str:
    """A GitHub expression as a Python one over ``_get(path)`` and the functions above."""
    out, position = [], 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if not match or match.end() == position:
            if expression[position:].strip() == "":
                break
            raise ValueError(f"cannot read the expression {expression!r} at {position}")
        position = match.end()
        if (text := match["string"]) is not None:
            out.append(repr(text[1:-1].replace("''", "'")))
        elif (text := match["number"]) is not None:
            out.append(text)
        elif (text := match["op"]) is not None:
            spelled = {"&&": " and ", "||": " or ", "!": " not ", "(": "(", ")": ")", ",": ", "}
            out.append(spelled.get(text, f" {text} "))
        else:
            name = match["name"]
            rest = expression[position:].lstrip()
            if name in _FUNCTIONS and rest.startswith("("):
                out.append(name)
            elif name in {"true", "false", "null"}:
                out.append({"true": "True", "false": "False", "null": "''"}[name])
            else:
                out.append(f"_get({name!r})")
    return "".join(out)


def _truthy(value: Any) -> bool:
    return value not in ("", 0, False, None, "false")


def _text(value: Any) -> str:
    if value is True or value is False:
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True).strip()
    return str(value)


def _step_outputs(step: Mapping[str, Any], output_file: Path) -> dict[str, str]:
    """What a step wrote to ``GITHUB_OUTPUT``; a stubbed cache restore reports its miss."""
    outputs = _read_outputs(output_file.read_text())
    if "uses" in step and step["uses"].startswith("actions/cache/restore@"):
        outputs.setdefault("cache-hit", "false")
    return outputs


def _read_outputs(text: str) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as the runner reads them."""
    found: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index)  # a missing delimiter fails, as on a runner
            found[name] = "\n".join(lines[index:end])
            index = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            found[name] = value
    return found
