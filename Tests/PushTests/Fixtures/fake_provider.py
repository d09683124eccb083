#!/usr/bin/python3
"""A local TLS HTTP/2 server that plays APNs and FCM for the push service's tests.

Built on Debian's python3-h2 (the HTTP/2 state machine) over the standard ssl module. The token decides the
answer, so each test sets up its own scenario:

  ...ok...        200
  ...retry...     429 with retry-after: 1 on the first request for the token, then 200
  ...flaky...     500 on the first request, then 200
  ...down...      500 always
  ...gone-past... APNs 410 Unregistered with a 1970 timestamp (the token was registered again since)
  ...gone...      APNs 410 Unregistered with a 2100 timestamp / FCM 404 UNREGISTERED
  ...bad...       APNs 400 BadDeviceToken / FCM 400 INVALID_ARGUMENT about the token

POST /token is the OAuth2 endpoint: it checks the RS256 assertion's shape and answers an access token.
Every request is appended to the log file as one JSON line. Prints the port on stdout once listening.
"""
import argparse
import asyncio
import base64
import json
import ssl
import time

import h2.config
import h2.connection
import h2.events

ACCESS_TOKEN = "fake-access-token"
seen = {}


def b64json(part):
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def answer(path, headers, body):
    """Returns (status, extra headers, body dict) for one request."""
    if path == "/token":
        form = dict(p.split("=", 1) for p in body.decode().split("&"))
        parts = form.get("assertion", "").split(".")
        if len(parts) != 3 or b64json(parts[0]).get("alg") != "RS256":
            return 400, {}, {"error": "invalid_grant"}, ""
        return 200, {}, {"access_token": ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"}, ""
    if path.startswith("/3/device/"):
        provider, token = "apns", path[len("/3/device/"):]
        auth = headers.get("authorization", "")
        parts = auth[len("bearer "):].split(".")
        if not auth.startswith("bearer ") or len(parts) != 3 or b64json(parts[0]).get("alg") != "ES256":
            return 403, {}, {"reason": "InvalidProviderToken"}, token
    elif path.endswith("/messages:send"):
        provider = "fcm"
        token = json.loads(body)["message"]["token"]
        if headers.get("authorization") != "Bearer " + ACCESS_TOKEN:
            return 401, {}, {"error": {"code": 401, "status": "UNAUTHENTICATED"}}, token
    else:
        return 404, {}, {}, ""
    count = seen.get(token, 0)
    seen[token] = count + 1
    if "retry" in token and count == 0:
        return 429, {"retry-after": "1"}, error(provider, 429, "TooManyRequests", "QUOTA_EXCEEDED"), token
    if ("flaky" in token and count == 0) or "down" in token:
        return 500, {}, error(provider, 500, "InternalServerError", "INTERNAL"), token
    if "gone" in token:
        if provider == "apns":
            stamp = 1000 if "gone-past" in token else 4102444800000
            return 410, {}, {"reason": "Unregistered", "timestamp": stamp}, token
        return 404, {}, error(provider, 404, "", "UNREGISTERED"), token
    if "bad" in token:
        if provider == "apns":
            return 400, {}, {"reason": "BadDeviceToken"}, token
        return 400, {}, error(provider, 400, "", "INVALID_ARGUMENT",
                              "The registration token is not a valid FCM registration token"), token
    return 200, {}, ({"name": "projects/p/messages/1"} if provider == "fcm" else {}), token


def error(provider, status, reason, code, message="error"):
    if provider == "apns":
        return {"reason": reason}
    return {"error": {"code": status, "message": message, "status": code if status != 404 else "NOT_FOUND",
                      "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                                   "errorCode": code}]}}


class Connection:
    def __init__(self, reader, writer, log):
        self.reader, self.writer, self.log = reader, writer, log
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}

    async def run(self):
        self.h2.local_settings.update({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 200})
        self.h2.initiate_connection()
        await self.flush()
        while True:
            data = await self.reader.read(65536)
            if not data:
                break
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    self.streams[event.stream_id] = (dict(event.headers), bytearray())
                elif isinstance(event, h2.events.DataReceived):
                    self.streams[event.stream_id][1].extend(event.data)
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    self.respond(event.stream_id)
            await self.flush()
        self.writer.close()

    def respond(self, stream_id):
        headers, body = self.streams.pop(stream_id)
        status, extra, payload, token = answer(headers.get(":path", ""), headers, bytes(body))
        self.log.write(json.dumps({"path": headers.get(":path"), "token": token, "status": status,
                                   "body": bytes(body).decode("utf-8", "replace"),
                                   "time": time.time(), "headers": {k: v for k, v in headers.items()
                                                                    if not k.startswith(":")}}) + "\n")
        self.log.flush()
        data = json.dumps(payload).encode()
        response = [(":status", str(status)), ("content-type", "application/json"),
                    ("content-length", str(len(data)))] + list(extra.items())
        self.h2.send_headers(stream_id, response)
        self.h2.send_data(stream_id, data, end_stream=True)

    async def flush(self):
        self.writer.write(self.h2.data_to_send())
        await self.writer.drain()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["h2"])
    log = open(args.log, "a")

    async def serve(reader, writer):
        try:
            await Connection(reader, writer, log).run()
        except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    import signal
    # The test process may block SIGTERM (the service runtime does) and the mask is inherited: undo it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    import h2.exceptions
    import h2.settings
    asyncio.run(main())
