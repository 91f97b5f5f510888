"""The body of POST /v1/review/{approve,reject}-matching as the README and the OpenAPI description
name it: a client written from either must send the fields the endpoint takes (`expected_items`,
not the count's `items`: that one is answered 422)."""

from __future__ import annotations

import re
from pathlib import Path

from amem.api.app import create_app
from amem.memory import Memory

README = Path(__file__).resolve().parents[2] / "README.md"
#: "with `A` and `B` set to the `C` and `D` that `/v1/review/items/count` answered"
SENTENCE = re.compile(
    r"reject-matching` \(a comment required\) with ((?:`\w+`(?: and )?)+) set to the "
    r"((?:`\w+`(?: and )?)+) that `/v1/review/items/count` answered"
)


def test_readme_and_openapi_name_the_fields_the_matching_decisions_take(memory: Memory) -> None:
    document = create_app(memory, decisions=True).openapi()
    schemas = document["components"]["schemas"]
    counted = set(schemas["MatchCount"]["properties"])
    for name in ("ApproveMatchingIn", "RejectMatchingIn"):
        assert {"expected_items", "fingerprint"} <= set(schemas[name]["required"])
        assert "items" not in schemas[name]["properties"]

    found = SENTENCE.search(" ".join(README.read_text("utf-8").split()))
    assert found, "README: the approve-matching sentence names the body's fields and the count's"
    sent, answered = (re.findall(r"`(\w+)`", group) for group in found.groups())
    assert sent == ["expected_items", "fingerprint"] and set(answered) <= counted

    for path in ("/v1/review/approve-matching", "/v1/review/reject-matching"):
        described = " ".join(document["paths"][path]["post"]["description"].split())
        assert "`expected_items` and `fingerprint` set to the `items` and `fingerprint`" in described
