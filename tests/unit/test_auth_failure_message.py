"""Authentication failures are explained in the user's terms: no `user None`, never the password."""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from connectors import ConnectorError
from connectors.mongodb.client import check_connection


class RefusingClient:
    class admin:  # noqa: N801 - mimics MongoClient.admin
        @staticmethod
        def command(name):
            raise OperationFailure("Authentication failed.", code=18)


def test_a_password_without_a_user_says_the_user_name_is_missing():
    options = {"host": ["db1:27017"], "password": "s3cret-pw", "authSource": "admin"}
    with pytest.raises(ConnectorError) as failure:
        check_connection(RefusingClient(), options)
    message = str(failure.value)
    assert "no user name was given" in message and "mongodb.user" in message
    assert "None" not in message and "s3cret-pw" not in message


def test_wrong_credentials_name_the_user_and_never_the_password():
    options = {"host": ["db1:27017"], "username": "alice", "password": "s3cret-pw"}
    with pytest.raises(ConnectorError) as failure:
        check_connection(RefusingClient(), options)
    message = str(failure.value)
    assert "'alice'" in message and "authSource 'admin'" in message and "s3cret-pw" not in message
