#!/usr/bin/env python3
"""The development mail sink `make run` starts: a tiny SMTP server (standard library only) that accepts every mail,
writes it to .run/mail/<time>-<to>.eml and prints its subject. Not a mail server: no TLS, no relaying, loopback only.

    deploy/local/mail-sink.py [port] [directory]      (defaults: 2525, .run/mail)
"""
import asyncio
import email
import email.header
import email.policy
import os
import re
import sys
import time

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 2525
DIRECTORY = sys.argv[2] if len(sys.argv) > 2 else ".run/mail"


def save(recipients, data):
    os.makedirs(DIRECTORY, exist_ok=True)
    message = email.message_from_bytes(data, policy=email.policy.default)
    subject = str(message.get("Subject", ""))
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time() % 1:.3f}"[1:]
    for recipient in recipients or ["unknown"]:
        safe = re.sub(r"[^A-Za-z0-9@._+-]", "_", recipient)
        path = os.path.join(DIRECTORY, f"{stamp}-{safe}.eml")
        with open(path, "wb") as file:
            file.write(data)
        print(f"mail to {recipient}: {subject}  ({path})", flush=True)


async def serve(reader, writer):
    def send(line):
        writer.write((line + "\r\n").encode())

    send("220 rave-mail-sink ESMTP")
    recipients = []
    while line := await reader.readline():
        command = line.decode(errors="replace").rstrip("\r\n")
        verb = command[:4].upper()
        if verb == "EHLO":
            send("250-rave-mail-sink\r\n250 8BITMIME")
        elif verb in ("HELO", "NOOP", "RSET"):
            recipients = [] if verb == "RSET" else recipients
            send("250 ok")
        elif verb == "MAIL":
            recipients = []
            send("250 ok")
        elif verb == "RCPT":
            recipients.append(command.partition("<")[2].partition(">")[0].lower())
            send("250 ok")
        elif verb == "DATA":
            send("354 end with <CRLF>.<CRLF>")
            await writer.drain()
            lines = []
            while (data_line := await reader.readline()) and data_line.rstrip(b"\r\n") != b".":
                lines.append(data_line[1:] if data_line.startswith(b".") else data_line)
            save(recipients, b"".join(lines))
            send("250 saved")
        elif verb == "QUIT":
            send("221 bye")
            break
        else:
            send("502 not implemented")
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    print(f"mail sink on smtp://127.0.0.1:{PORT}, mails in {DIRECTORY}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
