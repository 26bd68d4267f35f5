from django.urls import path

from verification.web import trail_start, trails, views

app_name = "verification"
urlpatterns = [
    path("", views.home, name="home"),
    path("about", views.about, name="about"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("trail", trail_start.trail_new, name="trail_new"),
    path("v/<uuid:verification_id>", views.result, name="result"),
    path("v/<uuid:verification_id>.json", views.result_json, name="result_json"),
    path("v/<uuid:verification_id>/report.md", views.report_markdown, name="report_markdown"),
    path("v/<uuid:verification_id>/report.html", views.report_html, name="report_html"),
    path("v/<uuid:verification_id>/evidence.csv", views.evidence_csv, name="evidence_csv"),
    path("v/<uuid:verification_id>/retry", views.retry, name="retry"),
    path("v/<uuid:verification_id>/trail-again", trail_start.trail_again, name="trail_again"),
    path("v/<uuid:verification_id>/node/<int:index>", trails.trail_node, name="trail_node"),
    path("v/<uuid:verification_id>/cancel", views.cancel, name="cancel"),
    path("v/<uuid:verification_id>/delete", views.delete, name="delete"),
    path("mine", views.checks, name="checks"),
    path("mine/forget", views.forget_checks, name="forget_checks"),
]
