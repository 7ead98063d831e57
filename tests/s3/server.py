"""A local S3 server for trawl's tests: moto's (https://github.com/getmoto/moto)
in server mode, on 127.0.0.1, with requests authenticated as on AWS.

Prints one line of JSON once it serves: {"endpoint", "access_key_id",
"secret_access_key", "bucket"}; runs until killed (or until stdin closes).
Usage: python3 tests/s3/server.py [PORT] (0 or none: any free port).
"""

import json
import os
import sys
import threading

# Authentication as on AWS after the requests that make the user, its key,
# its policy and the bucket (made below, before anything else is served).
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"

import boto3  # noqa: E402
import moto.iam.access_control as access_control  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

# moto 5 checks a request's signature over its path and query string as
# the web framework decoded them (`capture=a/`, `prefix=a/`), while
# clients sign them as sent, encoded as SigV4 specifies (`capture%3Da/`,
# `prefix=a%2F`): requests for such keys would be refused. Check the
# request line as sent.
_create_aws_request = access_control.IAMRequestBase._create_aws_request


def _as_sent(self):
    import flask

    environ = flask.request.environ if flask.has_request_context() else {}
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        self._path = raw
    return _create_aws_request(self)


access_control.IAMRequestBase._create_aws_request = _as_sent


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    anon = dict(
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
    )
    iam = boto3.client("iam", **anon)
    iam.create_user(UserName="trawl")
    key = iam.create_access_key(UserName="trawl")["AccessKey"]
    iam.put_user_policy(
        UserName="trawl",
        PolicyName="all",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            }
        ),
    )
    boto3.client("s3", **anon).create_bucket(Bucket="trawl")
    print(
        json.dumps(
            {
                "endpoint": endpoint,
                "access_key_id": key["AccessKeyId"],
                "secret_access_key": key["SecretAccessKey"],
                "bucket": "trawl",
            }
        ),
        flush=True,
    )
    # Until killed, or until the parent closes stdin.
    done = threading.Event()

    def watch():
        try:
            sys.stdin.read()
        finally:
            done.set()

    threading.Thread(target=watch, daemon=True).start()
    done.wait()
    server.stop()


if __name__ == "__main__":
    main()
