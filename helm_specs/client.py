"""HELM's stock ``HuggingFaceClient``, answering one request at a time.

``helm-run`` executes requests on ``--num-threads`` threads (4 by default) against one shared
model. bitsandbytes' NF4 CPU kernels are not safe under that: with 4 threads the same toxigen
prompts came back with loglikelihoods 10-25 nats off (and different for identical contexts);
with 1 thread they match the reference runner. One request at a time is also the core's
``batch_size=1`` shape, so every SafetyRepro deployment uses this client (torch still uses all
cores inside each forward pass). Nothing else differs from the stock client.
"""

from __future__ import annotations

import threading

from helm.clients.huggingface_client import HuggingFaceClient
from helm.common.request import Request, RequestResult

_LOCK = threading.Lock()


class SerialHuggingFaceClient(HuggingFaceClient):
    def make_request(self, request: Request) -> RequestResult:
        with _LOCK:
            return super().make_request(request)
