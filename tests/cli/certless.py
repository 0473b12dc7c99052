#!/usr/bin/env python3
"""A TLS server that asks for a client certificate, takes none, and resets each connection
after its first byte with no alert: the close that a real server's refusal may arrive as,
when its alert loses the race. Usage: certless.py CERT KEY CA PORTFILE"""
import os
import socket
import ssl
import struct
import sys

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
ctx.load_verify_locations(sys.argv[3])
ctx.verify_mode = ssl.CERT_OPTIONAL  # the request goes out; no certificate is required
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
with open(sys.argv[4] + ".tmp", "w") as f:
    f.write(str(listener.getsockname()[1]))
os.rename(sys.argv[4] + ".tmp", sys.argv[4])
while True:
    raw, _ = listener.accept()
    try:
        conn = ctx.wrap_socket(raw, server_side=True)
        conn.recv(1)
    except (OSError, ssl.SSLError):
        raw.close()
        continue
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
