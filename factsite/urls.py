from django.urls import include, path

from verification.api.runs import api
from verification.mcp import http as mcp_http

urlpatterns = [
    path("api/", api.urls),
    # The MCP server's streamable HTTP transport (docs/mcp.md).
    path("mcp", mcp_http.endpoint, name="mcp"),
    path("", include("verification.web.urls")),
]
