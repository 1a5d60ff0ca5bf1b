"""``idfields key new`` prints a fresh permutation key (with a key id unlike those already in
``IDFIELDS_PERMUTATION_KEY``); ``idfields key check`` vets the keys in
``IDFIELDS_PERMUTATION_KEY`` (several, newest first, separated by commas), exit status 2 if weak;
``idfields key derive --salt NAME`` turns a passphrase read from stdin (never an argument: it
would show in ``ps`` and shell history) into a key with scrypt.

``check`` never prints a key it read: only how many there are and their key ids.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from idfields.codecs import DEFAULT_ENV_VAR, derive_key, generate_key
from idfields.codecs._checked import ALPHABET
from idfields.codecs._public import PublicIds, key_id_of, keys_from_env
from idfields.errors import UsageError


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.action == "new":
        return {"key": _fresh_key()}
    if args.action == "derive":
        if not args.salt:
            raise UsageError("key derive needs --salt naming the deployment, e.g. --salt shop-prod")
        passphrase = sys.stdin.readline().rstrip("\n")
        if not passphrase:
            raise UsageError("key derive reads the passphrase from stdin, and got none")
        return {"key": derive_key(passphrase, args.salt).hex()}
    PublicIds.from_env(DEFAULT_ENV_VAR, label="idfields.check")  # raises, naming the problem
    ids = [ALPHABET[key_id_of(raw)] for raw in keys_from_env(DEFAULT_ENV_VAR)]
    return {"variable": DEFAULT_ENV_VAR, "keys": len(ids), "key_ids": ids, "ok": True}


def _fresh_key() -> str:
    """A new key whose key id no key already in the variable has, so the two can rotate together.

    A key id is one of 31 characters: two random keys share one about once in 31 draws.
    """
    taken = {key_id_of(raw) for raw in keys_from_env(DEFAULT_ENV_VAR)} if _env_has_keys() else set()
    while True:
        key = generate_key()
        if key_id_of(bytes.fromhex(key)) not in taken:
            return key


def _env_has_keys() -> bool:
    """Whether the variable names any key, by the rule ``keys_from_env`` reads it with."""
    return any(text.strip() for text in os.environ.get(DEFAULT_ENV_VAR, "").split(","))


def render(document: dict[str, Any]) -> str:
    if "key" in document:
        return str(document["key"])
    return (
        f"{document['variable']}: {document['keys']} key(s), key ids "
        f"{', '.join(document['key_ids'])} (newest first): ok"
    )
