"""An OTLP/HTTP metrics receiver for tests/it/otlp.rs: decodes each POSTed ExportMetricsServiceRequest
with the official protobuf definitions (PyPI package opentelemetry-proto) and prints it as one JSON
line on stdout, with the request's path and headers (a gzip body is unpacked first). Listens on
127.0.0.1 (port 0: the system's choice; the first line says which); with `--tls CERT KEY`, over
TLS with that certificate. Exit code 3 when the package is missing, so the test can say SKIP."""

import gzip
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

try:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
except ImportError as e:
    print(f"missing: {e}", file=sys.stderr, flush=True)
    sys.exit(3)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = metrics_service_pb2.ExportMetricsServiceRequest()
        request.ParseFromString(body)
        line = {
            "path": self.path,
            "content_type": self.headers.get("Content-Type"),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "request": json_format.MessageToDict(request),
        }
        print(json.dumps(line), flush=True)
        reply = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
if sys.argv[1:2] == ["--tls"]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
