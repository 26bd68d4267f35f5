"""The pages: views, URLs, reports to download, examples, template tags."""
