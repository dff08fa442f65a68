"""Record the notebooks' offline recordings, by running them for real.

    python notebooks/recordings/record.py [NAME ...]

Each notebook ``notebooks/NAME.ipynb`` that has a model script ``NAME_script.py`` here is
run with nbclient in a real kernel, in a copy of ``notebooks/``, against a scripted model
on 127.0.0.1: the script plays the model; the extension, its client, the tools, the
sandbox and the approvals are the real ones, and the client records what it sends and
receives (``AGENT_MAGICS_RECORD_PATH``). The notebook runs twice, once with every call
that asks for approval approved and once with each denied, as a person in JupyterLab or a
headless run would answer; the two recordings are merged into ``NAME.jsonl``, which plays
back either path. The result is then played back, both ways, in a fresh copy before it
is written; a notebook that fails or does not match stops the run with the reason.

A recording here keeps of each request only what playback reads (see :func:`compact`):
the model's name, the person's prompts, the environment context (its working folder) and
the tool outputs, with each image's data left out. The instructions, the tool list, the
notebook context and the model's own earlier turns, sent again in every request, are not
kept: playback compares only the prompts and tool outputs, and answers from the recorded
response, which is kept whole.

A model script may also name ``MECHANISMS``: the sandbox mechanisms to record under
(``AGENT_MAGICS_SANDBOX_MECHANISM``; ``None`` is whatever works here, ``"none"`` a machine
where none works, where every command asks first), each played back as well.

A model script is a module with ``turns()``: the model's answers, one list of output
items per request, as :class:`agent_magics.testing.ScriptedResponsesServer` takes them
(an item list, or a function of the request body that returns one; :func:`last_output`
and :func:`denied` help such functions answer an approval either way).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
from nbclient import NotebookClient

from agent_magics.models.replay import OPENING, signature
from agent_magics.testing import ScriptedResponsesServer

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parent
BRANCHES = ("approve", "deny")
PROBLEMS = ("does not match it", "has no more answers", "No model is configured")
MODEL = "scripted-teacher"
IMAGE_LEFT_OUT = "<image left out of the recording>"
CWD = re.compile(r"<cwd>(.*?)</cwd>", re.S)


def last_output(body: dict[str, Any]) -> str:
    """The text of the last tool output in a request body ('' when none)."""
    for item in reversed(body.get("input") or []):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            if isinstance(output, list):
                return "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
            return str(output)
    return ""


def denied(body: dict[str, Any]) -> bool:
    """Whether the call the model made last was denied (by a person or a headless run)."""
    return "rejected by user" in last_output(body)


def load_script(name: str) -> ModuleType:
    path = HERE / f"{name.replace('-', '_')}_script.py"
    spec = importlib.util.spec_from_file_location(f"{name.replace('-', '_')}_script", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"No model script for {name}: expected {path.name} beside record.py.")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(HERE))  # scripts import the helpers above from this file
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HERE))
    return module


def kernelspec(folder: Path) -> str:
    """A kernelspec for this interpreter, so the kernel runs the package as installed."""
    spec = folder / "kernels" / "agent-magics-record"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "record", "language": "python"})
    )
    return spec.name


def run_notebook(name: str, folder: Path, env: dict[str, str]) -> Any:
    """Run ``folder/NAME.ipynb`` headless with ``env`` set; the executed notebook. The
    kernel gets an empty home of its own (:func:`own_home`)."""
    path = folder / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.update(env, JUPYTER_PATH=str(folder.parent / "jupyter"))
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MAGICS_RECORD_PATH"):
        if var not in env:
            os.environ.pop(var, None)
    try:
        with own_home() as home:
            os.environ["HOME"] = str(home)
            client = NotebookClient(
                nb,
                kernel_name=kernelspec(folder.parent / "jupyter"),
                timeout=300,
                resources={"metadata": {"path": str(folder)}},
            )
            client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb


@contextmanager
def own_home() -> Iterator[Path]:
    """An empty home for a notebook's kernel, removed afterwards, so the recorded outputs
    hold nothing of this machine's login profile: a command that runs before the shell
    snapshot is ready reads it, and a noisy one (a pyenv set-up that cannot write its
    shims inside the sandbox) adds a line to the command's output. Outside /tmp where
    it can be (/var/tmp), as a person's home is: a read-only sandbox cannot hide the
    signing key of a home under /tmp."""
    var_tmp = Path("/var/tmp")
    place = var_tmp if var_tmp.is_dir() and os.access(var_tmp, os.W_OK) else None
    home = Path(tempfile.mkdtemp(prefix="agent-magics-home-", dir=place))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def problems(nb: Any) -> list[str]:
    """Errors and recording sentences in the executed notebook's outputs."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = json.dumps(output.get("data", {})) + str(output.get("text", ""))
            if output.get("output_type") == "error":
                found.append(f"cell {index}: {output.get('ename')}: {output.get('evalue')}")
            found += [f"cell {index}: {p}" for p in PROBLEMS if p in text]
    return found


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _read(item: dict[str, Any]) -> bool:
    """A prompt, an environment context (playback takes the working folder from it), or a
    tool output; not the instructions, the notebook context or the model's own items."""
    if item.get("role") == "tool" or item.get("type") in (
        "function_call_output",
        "custom_tool_call_output",
    ):
        return True
    if item.get("role") != "user" or item.get("type", "message") != "message":
        return False
    text = _text(item)
    return text.startswith("<environment_context>") or not text.startswith(OPENING)


def _no_image_data(value: Any) -> Any:
    """``value`` with the data of each ``data:`` URL (a figure run_python sent the model)
    replaced by a few words; the part stays, so the text around it reads the same."""
    if isinstance(value, str) and value.startswith("data:") and ";base64," in value:
        return value.split(",", 1)[0] + "," + IMAGE_LEFT_OUT
    if isinstance(value, list):
        return [_no_image_data(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_image_data(v) for k, v in value.items()}
    return value


def compact(request: dict[str, Any]) -> dict[str, Any]:
    """The part of a request body that playback reads: :func:`signature` and the working
    folder are the same as the whole body's (checked), everything else is left out."""
    key = "messages" if "messages" in request and "input" not in request else "input"
    items = request.get(key) or []
    kept = {"model": request.get("model"), key: _no_image_data([i for i in items if _read(i)])}
    found = [CWD.search(json.dumps(i)) for i in (items, kept[key])]
    where = [f.group(1) if f else None for f in found]
    if signature(kept) != signature(request) or where[0] != where[1]:
        raise SystemExit("A shortened request would play back differently; record.py needs a fix.")
    return kept


def merge(files: list[Path], tmp: Path) -> list[str]:
    """One recording holding every exchange of ``files`` once, found by signature, each
    request as :func:`compact` keeps it; the temporary folder's path is written as a
    placeholder (it is masked on playback)."""
    header: str | None = None
    seen: dict[str, str] = {}
    for file in files:
        lines = file.read_text(encoding="utf-8").splitlines()
        header = header or lines[0]
        for line in lines[1:]:
            record = json.loads(line)
            if "request" in record:
                record["request"] = compact(record["request"])
                short = json.dumps(record, ensure_ascii=False)
                seen.setdefault(json.dumps(signature(record["request"])), short)
    scrub = [(str(tmp), "/tmp/recording"), (sys.prefix, "/opt/python")]
    scrub += [(str(Path.home()), "/home/user")] if len(Path.home().parts) > 1 else []
    out = []
    for line in [header or "", *seen.values()]:
        for old, new in scrub:
            line = line.replace(json.dumps(old)[1:-1], new)
        out.append(line)
    return out


def mechanism_env(mechanism: str | None) -> dict[str, str]:
    """The environment that makes the kernel's sandbox ``mechanism`` (``None``: as found)."""
    return {} if mechanism is None else {"AGENT_MAGICS_SANDBOX_MECHANISM": mechanism}


def copy_notebooks(tmp: Path) -> Path:
    folder = tmp / "notebooks"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    return folder


def record(name: str) -> Path:
    script = load_script(name)
    with tempfile.TemporaryDirectory(prefix="agent-magics-record-") as tmp_name:
        tmp = Path(tmp_name)
        files = []
        runs = [(m, b) for m in getattr(script, "MECHANISMS", (None,)) for b in BRANCHES]
        for mechanism, branch in runs:
            run = f"{branch}-{mechanism}" if mechanism else branch
            folder = copy_notebooks(tmp / run)
            out = tmp / f"{run}.jsonl"
            with ScriptedResponsesServer(script.turns()) as server:
                env = {
                    "OPENAI_BASE_URL": server.base_url,
                    "AGENT_MAGICS_MODEL": MODEL,
                    "AGENT_MAGICS_RECORD_PATH": str(out),
                    "AGENT_MAGICS_HEADLESS_APPROVAL": branch,
                } | mechanism_env(mechanism)
                nb = run_notebook(name, folder, env)
            if found := problems(nb):
                raise SystemExit(f"{name} ({run}) did not run cleanly: " + "; ".join(found))
            files.append(out)
        lines = merge(files, tmp)
        for mechanism, branch in runs:  # play it back every way before keeping it
            run = f"{branch}-{mechanism}" if mechanism else branch
            folder = copy_notebooks(tmp / f"play-{run}")
            (folder / "recordings" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
            env = {"AGENT_MAGICS_HEADLESS_APPROVAL": branch} | mechanism_env(mechanism)
            nb = run_notebook(name, folder, env)
            if found := problems(nb):
                raise SystemExit(f"{name} does not play back ({run}): " + "; ".join(found))
    target = HERE / f"{name}.jsonl"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    for name in names:
        print(f"{name}: recorded {record(name).relative_to(NOTEBOOKS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
