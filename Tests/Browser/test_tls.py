"""What browsers do with TLS that game clients of the binary protocol do not: resume a session on a new
connection. Chromium loads a page's scripts over a second connection that resumes the first one's session; a server
that refuses the resumption breaks that load (net::ERR_SSL_PROTOCOL_ERROR), which this test pins down without a
browser.
"""

import socket
import ssl
import unittest
import urllib.parse

import harness


class TLSTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack()

    def test_a_second_connection_resumes_the_first_ones_tls_session(self):
        address = urllib.parse.urlsplit(self.stack.url)
        context = ssl.create_default_context(cafile=self.stack.ca)
        context.set_alpn_protocols(["http/1.1"])
        with context.wrap_socket(socket.create_connection((address.hostname, address.port)),
                                 server_hostname=address.hostname) as first:
            first.sendall(f"GET /demo/ HTTP/1.1\r\nHost: {address.netloc}\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while chunk := first.recv(65536):
                answer += chunk
            self.assertTrue(answer.startswith(b"HTTP/1.1 200"), answer[:100])
            session = first.session  # TLS 1.3 tickets arrive after the handshake: read above
        self.assertIsNotNone(session)
        try:
            with context.wrap_socket(socket.create_connection((address.hostname, address.port)),
                                     server_hostname=address.hostname, session=session) as second:
                second.sendall(f"GET /sdk/rave.js HTTP/1.1\r\nHost: {address.netloc}\r\nConnection: close\r\n\r\n"
                               .encode())
                self.assertTrue(second.recv(100).startswith(b"HTTP/1.1 200"))
                self.assertTrue(second.session_reused, "the server chose a full handshake (fine, but unexpected)")
        except ssl.SSLError as error:
            self.fail(f"the gateway refused to resume its own TLS session ({error}); browsers then fail the loads "
                      "of a page's second connection")


if __name__ == "__main__":
    unittest.main()
