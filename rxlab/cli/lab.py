"""JupyterLab: `rxlab lab` starts it from this environment on 127.0.0.1 and prints the URL with its token.

As root too (the set-up runs as root on a fresh machine, and JupyterLab
refuses root without --allow-root). `rxlab lab --configure` writes the same
defaults (127.0.0.1, root allowed) into this environment's Jupyter
configuration, so a plain `.venv/bin/jupyter lab` works as root as well:
`make setup` does it.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from pathlib import Path

from rxlab.core.paths import REPO

TITLE = "JupyterLab"
HOST = "127.0.0.1"


def add_parser(sub) -> None:
    p = sub.add_parser(
        "lab",
        help="start JupyterLab on 127.0.0.1 (as root too) and print its URL with the token",
        description="Start JupyterLab from this environment, bound to 127.0.0.1 with a token, "
        "on the project's notebooks, and print the URL to open (with the token). "
        "As root, --allow-root is passed. Stop it with Ctrl-C (twice).",
    )
    p.add_argument(
        "notebook",
        nargs="?",
        default="00_start_here",
        help="the notebook to open: a name, number or path (default: 00_start_here; '' opens none)",
    )
    p.add_argument("--port", type=int, help="the port (default: 8888 if free, else the next free one)")
    p.add_argument("--token", help="the token (default: a new random one, printed in the URL)")
    p.add_argument("--root-dir", help="the folder JupyterLab serves (default: the repository)")
    p.add_argument("--browser", action="store_true", help="also open a web browser on this machine")
    p.add_argument("--dry-run", action="store_true", help="print the URL and the command, start nothing")
    p.add_argument(
        "--configure",
        action="store_true",
        help="instead: write 127.0.0.1 and allow_root into this environment's Jupyter configuration "
        "(so `.venv/bin/jupyter lab` works as root too), print the file, start nothing",
    )
    p.set_defaults(fn=_lab)


def free_port(start: int = 8888, tries: int = 100) -> int:
    """`start` if nothing listens there on 127.0.0.1, else the next free port (else one the kernel picks)."""
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def jupyter_lab() -> Path:
    """This environment's jupyter-lab (next to its python), or one line saying how to install it."""
    exe = Path(sys.executable).parent / "jupyter-lab"
    if not exe.is_file():
        raise RuntimeError(
            f"no JupyterLab in this environment ({exe} is missing): `make setup`, or "
            f"{Path(sys.executable).parent / 'pip'} install -e '.[lab]'"
        )
    return exe


def _notebook(name: str, root: Path) -> str:
    """The notebook's path relative to the served folder ('' for none)."""
    if not name:
        return ""
    if (root / name).is_file():
        return Path(name).as_posix()
    from rxlab.runs.notebooks import resolve_notebook  # noqa: PLC0415 - it imports the study registry

    path = resolve_notebook(name)
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ValueError(
            f"notebook {name!r}: {path} is not under the folder served ({root}); pass --root-dir"
        ) from None


def lab_command(
    *,
    port: int,
    token: str,
    root_dir: Path,
    notebook: str = "",
    browser: bool = False,
    is_root: bool | None = None,
) -> list[str]:
    """The jupyter-lab command line: 127.0.0.1, the port (no fallback to another), the token, the folder,
    --allow-root when running as root."""
    is_root = os.geteuid() == 0 if is_root is None else is_root
    cmd = [
        str(jupyter_lab()),
        *([notebook] if notebook else []),
        f"--ServerApp.ip={HOST}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
    ]
    if not browser:
        cmd.append("--no-browser")
    if is_root:
        cmd.append("--allow-root")
    return cmd


def url(port: int, token: str, notebook: str = "") -> str:
    path = f"lab/tree/{notebook}" if notebook else "lab"
    return f"http://{HOST}:{port}/{path}?token={token}"


def write_config(prefix: str | os.PathLike | None = None) -> Path:
    """<prefix>/etc/jupyter/jupyter_server_config.json: this environment's Jupyter server listens on
    127.0.0.1 and accepts to run as root (other keys in the file are kept). Returns the file."""
    f = Path(prefix or sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    try:
        conf = json.loads(f.read_text()) if f.is_file() else {}
    except ValueError:
        raise ValueError(f"{f}: not JSON; fix or remove it, then run `rxlab lab --configure` again") from None
    conf.setdefault("ServerApp", {}).update({"ip": HOST, "allow_root": True})
    f.write_text(json.dumps(conf, indent=1) + "\n")
    return f


def _lab(a) -> int:
    if a.configure:
        print(
            f"wrote {write_config()}: `{Path(sys.executable).parent / 'jupyter'} lab` listens on {HOST} and "
            "runs as root too"
        )
        return 0
    if a.port is not None and not 1 <= a.port <= 65535:
        raise ValueError(f"--port {a.port}: expected 1..65535")
    root = Path(a.root_dir).resolve() if a.root_dir else REPO
    if not root.is_dir():
        raise ValueError(f"--root-dir {a.root_dir}: not a directory")
    notebook = _notebook(a.notebook, root)
    port = a.port or free_port()
    token = a.token or secrets.token_hex(24)
    cmd = lab_command(port=port, token=token, root_dir=root, notebook=notebook, browser=a.browser)
    print(
        f"JupyterLab on {HOST}:{port} (serving {root}); open:\n\n    {url(port, token, notebook)}\n",
        flush=True,
    )
    if a.dry_run:
        print(" ".join(cmd))
        return 0
    print("Stop it with Ctrl-C (twice).", flush=True)
    os.execv(cmd[0], cmd)  # JupyterLab takes over this process (its signals, its output)
    return 0  # not reached
