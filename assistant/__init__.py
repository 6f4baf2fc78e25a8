"""Paper Assistant: questions, related work and a chat page over paper abstracts."""

import vectorstore.offline  # noqa: F401  first: switches every library's telemetry off (see that module)
