"""Who may do what: a run's owner, and what one client may spend."""
