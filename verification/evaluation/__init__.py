"""Accuracy evaluation on public benchmarks: dataset readers, metrics and the written report.
`manage.py evaluate` drives them through the same engine as the web app."""
