"""Reading the harness's TOML files (scenarios, grids): the file, its tables and their keys,
each refusal one line that names the file, the table and what is allowed."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from ...errors import InputError
from ...traces.blocks import regular_file

__all__ = ["read_toml", "table", "tables", "unknown", "file_path", "out_folder"]


def read_toml(path: str | Path, what: str) -> dict:
    """The parsed TOML file ``path`` (UTF-8, a byte-order mark skipped); ``what`` names the kind
    of file in messages ("scenario", "grid")."""
    path = Path(path)
    regular_file(path, f"{what} {path}")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{what} {path}: cannot be read ({e.strerror or e})") from None
    try:
        return tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{what} {path}: not valid TOML ({e})") from None
    except RecursionError:
        raise InputError(f"{what} {path}: arrays or tables nested too deep to read (a "
                         f"{what} nests a few levels)") from None
    except ValueError as e:   # an integer too long to read
        raise InputError(f"{what} {path}: not valid TOML ({str(e).split(';')[0]})") from None


def table(data: dict, key: str, where: str) -> dict:
    """The table ``[key]`` of ``data`` ({} when absent); ``where`` prefixes messages."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{where}[{key}] must be a table, got {type(value).__name__}")
    return value


def tables(data: dict, key: str, where: str) -> list[dict]:
    """The array of tables ``[[key]]`` of ``data`` ([] when absent)."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"{where}[[{key}]] must be a list of tables")
    return value


def unknown(values: dict, allowed, where: str) -> None:
    """Refuse keys of ``values`` outside ``allowed``, naming them and every allowed key."""
    extra = sorted(set(values) - set(allowed))
    if extra:
        raise InputError(f"{where}unknown key {', '.join(map(repr, extra))}; allowed: "
                         f"{', '.join(sorted(allowed))}")


def file_path(value, base: Path | None, key: str, where: str) -> Path:
    """The file ``value`` names (relative to ``base``, the TOML file's folder); it must exist."""
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}load.{key} must be a file name, got {value!r}")
    p = Path(value).expanduser()
    p = p if p.is_absolute() or base is None else base / p
    regular_file(p, f"{key} {str(p)!r}")
    if not p.is_file():
        raise InputError(f"{key} {str(p)!r}: no such file")
    return p


def out_folder(text: str) -> str:
    """A report folder named on the command line (``--out``): a blank name is refused (it
    would write into the current folder, or nowhere, without a word)."""
    if not text.strip():   # argparse shows this message ("argument --out: ...")
        raise argparse.ArgumentTypeError(f"{text!r}: name a folder for the report (a blank "
                                         "name would write into the current folder)")
    return text
