"""What a run is given, validated once for the pages, the API and the CLI: the form and its
settings, the user's documents, the domain lists."""
