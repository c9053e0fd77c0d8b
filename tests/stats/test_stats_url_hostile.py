"""A stats store URL whose port is not a number is a ``StoreError`` naming the URL as
unusable (before: SQLAlchemy's ``ValueError`` escaped ``query``, a traceback from
``hoare stats --db 'postgresql://u:pw@[::1/db'``); the password is never shown."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.cli.parser import main
from hoare.stats.query import query
from hoare.stats.schema import StoreError

pytest.importorskip("sqlalchemy")

PORTS = st.one_of(st.sampled_from([":1", "port", "1e3", "0x10", "١٢", " 5", "[::1"]),
                  st.text(st.characters(blacklist_characters="/@?#"), min_size=1,
                          max_size=8).filter(lambda t: not t.isdigit()))


@settings(max_examples=60, deadline=None)
@given(port=PORTS)
def test_a_port_that_is_not_a_number_is_a_store_error(port: str) -> None:
    url = f"postgresql://user:hunter2@host:{port}/db"
    try:
        query(url)
    except StoreError as error:
        assert "hunter2" not in str(error)


def test_the_command_names_the_url_unusable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "--db", "postgresql://user:hunter2@[::1/db"]) == 2
    err = capsys.readouterr().err
    assert "not a usable SQLAlchemy URL" in err and "hunter2" not in err
    assert "internal error" not in err
