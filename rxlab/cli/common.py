"""What every command group shares: the parser class, its help format, one-line failures.

Every parser is a `Parser`: no abbreviated options (`--host` is never taken
for `--host-id`), each option's default printed after its meaning, and a bad
argument reported in one line with exit code 2.
"""
from __future__ import annotations

import argparse
import sys
import textwrap

# The exceptions that mean "the input was wrong" (or the machine refused it): one line, exit 2.
# KeyError's text is quoted by Python; `first_line` takes the quotes off.
BAD_INPUT = (ValueError, LookupError, OSError, RuntimeError)
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's help, then its default: `(default: X)`, or `(default: off)` for a flag.

    An option whose default is None says its default in its own words (its
    help contains "default"), because None means "look it up" (an environment
    variable, a directory next to the package) and printing None says nothing.
    """

    def _fill_text(self, text, width, indent):
        # descriptions and epilogs: each line on its own, so that a list stays a list; a line that
        # fits is kept as it is (the command list is laid out already)
        out = []
        for line in text.splitlines():
            lead = indent + " " * (len(line) - len(line.lstrip()))
            if len(indent + line) <= width or not line.strip():
                out.append(indent + line if line.strip() else "")
            else:
                out.append(textwrap.fill(line.strip(), width, initial_indent=lead, subsequent_indent=lead))
        return "\n".join(out)

    def _get_help_string(self, action):
        text = action.help or ""
        if not action.option_strings or "default" in text or action.default is argparse.SUPPRESS:
            return text
        if isinstance(action, (argparse._StoreTrueAction, argparse._CountAction)) and not action.default:
            return f"{text} (default: off)"
        if action.default is None:
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse with rxlab's defaults (no abbreviations, defaults shown) and a one-line error."""

    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kw)

    def error(self, message: str):
        if self.get_default("passthrough") and message.startswith("unrecognized arguments"):
            message += "; to pass them on, put them after --"
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (`{self.prog} --help` says what is allowed)\n")


def first_line(e: BaseException) -> str:
    """An exception's message as one line (KeyError's quotes removed)."""
    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    if isinstance(e, OSError) and e.strerror:
        text = f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    return (text.strip().splitlines() or [type(e).__name__])[0]


def fail(prog: str, e: BaseException) -> int:
    """One line naming the cause (one per bad value when there are several: rxlab.core.params.ParamErrors
    carries them as `lines`), exit code 2."""
    for line in getattr(e, "lines", None) or [first_line(e)]:
        print(f"{prog}: {line}", file=sys.stderr)
    return EXIT_BAD_INPUT


def interrupted(prog: str, e: KeyboardInterrupt) -> int:
    """Ctrl-C: where the partial run went (when there was one), exit 130, no traceback."""
    path = getattr(e, "path", None)
    where = f"the partial run is kept as failed in {path}" if path else "no run of this command was stored"
    print(f"\n{prog}: interrupted; {where}; earlier runs are untouched", file=sys.stderr)
    return EXIT_INTERRUPTED
