"""The Pydantic ID type: int in Python, string in JSON and OpenAPI, and a JavaScript client's
round trip (JSON.parse into doubles, JSON.stringify back) loses no digit."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from idfields.codecs._keys import generate_key
from idfields.codecs._public import PublicIds
from idfields.generators import make_generator
from idfields.pydantic import MAX_ID, Id, IdText, PublicIdText

HERE = Path(__file__).resolve().parent


class Post(BaseModel):
    id: Id
    parent_id: Id | None = None


class PlainPost(BaseModel):  # what FastAPI users write without the type
    id: int


def js_round_trip(text: str) -> str:
    """``JSON.stringify(JSON.parse(text))`` in Node, or float64 emulation where node is absent."""
    node = shutil.which("node")
    if node is None:
        return json.dumps(json.loads(text, parse_int=float), separators=(",", ":"))
    done = subprocess.run(
        [node, str(HERE / "js_round_trip.js")], input=text, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def ids(count: int) -> list[int]:
    return make_generator("snowflake", node=7).take(count)


def test_a_javascript_round_trip_keeps_every_id() -> None:
    posts = [Post(id=i, parent_id=i - 1) for i in ids(1000)]
    sent = json.dumps([post.model_dump(mode="json") for post in posts])
    back = [Post.model_validate(item) for item in json.loads(js_round_trip(sent))]
    assert back == posts


def test_a_plain_int_field_loses_digits_in_javascript() -> None:
    """Why the type exists: bare JSON numbers above 2**53 come back changed."""
    posts = [PlainPost(id=i) for i in ids(1000)]
    sent = json.dumps([post.model_dump(mode="json") for post in posts])
    back = [PlainPost.model_validate(item) for item in json.loads(js_round_trip(sent))]
    assert sum(a != b for a, b in zip(back, posts, strict=True)) > 900


def test_int_in_python_string_in_json() -> None:
    post = Post(id="384561619019321341", parent_id=384561619019321340)
    assert post.id == 384561619019321341 and isinstance(post.id, int)
    assert post.model_dump() == {"id": 384561619019321341, "parent_id": 384561619019321340}
    assert post.model_dump_json() == '{"id":"384561619019321341","parent_id":"384561619019321340"}'
    assert Post.model_validate_json('{"id": 384561619019321341}').id == 384561619019321341


def test_the_schema_says_string_with_a_pattern() -> None:
    properties = Post.model_json_schema()["properties"]
    text = {"type": "string", "pattern": "^[0-9]{1,19}$"}
    assert properties["id"].items() >= text.items()
    assert text in properties["parent_id"]["anyOf"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5e17, "send IDs as strings"),
        ("12ab", "a string matching"),
        (True, "a whole number"),
        ("-5", "a string matching"),
        (-5, "out of range"),
        (MAX_ID + 1, "out of range"),
        ("99999999999999999999", "a string matching"),
    ],
)
def test_bad_ids_are_refused_with_the_reason(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Post(id=value)


def test_id_type_takes_another_text_form() -> None:
    """The seam for public IDs: any codec's encode/decode and the pattern of its strings."""
    Hex = Annotated[
        int,
        IdText(
            to_text=lambda i: format(i, "x"), from_text=lambda s: int(s, 16), pattern="^[0-9a-f]+$"
        ),
    ]
    adapter = TypeAdapter(Hex)
    assert adapter.dump_json(255) == b'"ff"'
    assert adapter.validate_json('"ff"') == 255
    assert adapter.json_schema() == {"type": "string", "pattern": "^[0-9a-f]+$"}
    with pytest.raises(ValidationError, match="a string matching"):
        adapter.validate_python("zz")


def test_public_id_text_sends_the_codecs_strings() -> None:
    codec = PublicIds(generate_key(), label="post")
    PostId = Annotated[int, PublicIdText(codec)]

    class PublicPost(BaseModel):
        id: PostId

    real = ids(1)[0]
    sent = PublicPost(id=real).model_dump_json()
    text = json.loads(sent)["id"]
    assert text == codec.encode(real) and len(text) == codec.length
    assert PublicPost.model_validate_json(sent).id == real
    assert PublicPost.model_json_schema()["properties"]["id"]["pattern"].startswith("^[0123")
    typo = text[:-2] + ("1" if text[-2] == "0" else "0") + text[-1]  # one character mistyped
    with pytest.raises(ValidationError, match="public ID"):
        PublicPost.model_validate({"id": typo})
