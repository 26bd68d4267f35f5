"""factsite for agents: an MCP server (the official `mcp` SDK) over the same services, selectors
and limits as the REST API. `server.py` holds the tools and resources, `calls.py` what each does
(synchronous, as the API's endpoints are), `answers.py` a result shaped for a model's context,
`identity.py` who is asking, and `http.py` the streamable HTTP transport served by Django at
/mcp; `manage.py mcp` serves stdio. docs/mcp.md says how to connect an assistant."""
