#!/usr/bin/env python3
"""The SMTP server the email tests send to: Debian's python3-aiosmtpd on loopback.

usage: smtp-server.py PORT OUT [--cert C --key K] [--auth USER:PASS] [--reject "550 5.1.1 ..."]
Each message it accepts is one JSON line in OUT (envelope, content, whether TLS and AUTH were used);
the session, line by line, goes to OUT.transcript. --cert/--key offer STARTTLS; --auth requires it
(over TLS only); --reject answers every RCPT with that reply. Prints "ready" once it listens.
"""
import argparse
import json
import logging
import signal
import ssl
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("out")
parser.add_argument("--cert")
parser.add_argument("--key")
parser.add_argument("--auth")
parser.add_argument("--reject")
args = parser.parse_args()

# aiosmtpd logs every line it reads and every reply it sends at DEBUG, on "mail.log".
log = logging.getLogger("mail.log")
log.setLevel(logging.DEBUG)
handler = logging.FileHandler(args.out + ".transcript")
handler.setFormatter(logging.Formatter("%(message)s"))
log.addHandler(handler)


class Handler:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if args.reject:
            return args.reject
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with open(args.out, "a") as out:
            record = {
                "from": envelope.mail_from,
                "to": envelope.rcpt_tos,
                "content": envelope.content.decode("utf8", "replace"),
                "tls": session.ssl is not None,
                "authenticated": bool(session.authenticated),
            }
            out.write(json.dumps(record) + "\n")
        return "250 2.0.0 Message accepted for delivery"


def authenticator(server, session, envelope, mechanism, auth_data):
    user, password = args.auth.split(":", 1)
    ok = (
        isinstance(auth_data, LoginPassword)
        and auth_data.login.decode() == user
        and auth_data.password.decode() == password
    )
    return AuthResult(success=ok)


context = None
if args.cert:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)

controller = Controller(
    Handler(),
    hostname="127.0.0.1",
    port=args.port,
    tls_context=context,
    authenticator=authenticator if args.auth else None,
    auth_required=bool(args.auth),
    auth_require_tls=True,
)
controller.start()
print("ready", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
controller.stop()
