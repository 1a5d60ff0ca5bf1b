"""``idfields encode`` and ``idfields decode``: base62 text, the keyed permutation (a number) and
public ID strings (``--codec public --label app.model``, as the Django field shows them).

The permutation key is read only from ``IDFIELDS_PERMUTATION_KEY`` (public: several keys, newest
first, by commas): an argument would show up in ``ps`` and in shell history. ``encode`` and
``decode`` of a pair print the same JSON document.
"""

from __future__ import annotations

import argparse
from typing import Any

from idfields import codecs
from idfields.cli._arguments import id_value
from idfields.codecs import DEFAULT_ENV_VAR, KeyedPermutation, PublicIds
from idfields.errors import UsageError

OUTPUT_KEY = {"base62": "base62", "permute": "public", "public": "public"}


def run_encode(args: argparse.Namespace) -> dict[str, Any]:
    value = id_value(args.id)
    if args.codec == "base62":
        _refuse_bits(args)
        return {"codec": "base62", "id": value, "base62": codecs.encode(value)}
    if args.codec == "public":
        text = _public_ids(args).encode(value)
        return {"codec": "public", "label": args.label, "id": value, "public": text}
    bits = args.bits or 63
    public = KeyedPermutation.from_env(DEFAULT_ENV_VAR, bits=bits).encode(value)
    return {"codec": "permute", "bits": bits, "id": value, "public": public}


def run_decode(args: argparse.Namespace) -> dict[str, Any]:
    if args.codec == "base62":
        _refuse_bits(args)
        return {"codec": "base62", "id": codecs.decode(args.text), "base62": args.text}
    if args.codec == "public":
        value = _public_ids(args).decode(args.text)
        return {"codec": "public", "label": args.label, "id": value, "public": args.text}
    bits = args.bits or 63
    public = id_value(args.text)
    value = KeyedPermutation.from_env(DEFAULT_ENV_VAR, bits=bits).decode(public)
    return {"codec": "permute", "bits": bits, "id": value, "public": public}


def render_encode(document: dict[str, Any]) -> str:
    return str(document[OUTPUT_KEY[document["codec"]]])


def render_decode(document: dict[str, Any]) -> str:
    return str(document["id"])


def _public_ids(args: argparse.Namespace) -> PublicIds:
    if not args.label:
        raise UsageError(
            "--codec public needs --label, e.g. --label shop.order (Django: app.model)"
        )
    return PublicIds.from_env(DEFAULT_ENV_VAR, label=args.label, bits=args.bits or 63)


def _refuse_bits(args: argparse.Namespace) -> None:
    if args.bits is not None:
        raise UsageError("--bits applies to --codec permute only; drop it or use --codec permute")
