"""The `rxlab` command: parse, call the layers below, print."""
from rxlab.cli.main import main

__all__ = ["main"]
