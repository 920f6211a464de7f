"""What the gateway's web pages share: the document shell, security headers, agent Markdown
and the static assets (served from the project itself, never from a CDN)."""
