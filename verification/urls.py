from django.urls import path

from verification import views

app_name = "verification"
urlpatterns = [
    path("", views.home, name="home"),
    path("about", views.about, name="about"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("v/<uuid:verification_id>", views.result, name="result"),
    path("v/<uuid:verification_id>.json", views.result_json, name="result_json"),
    path("v/<uuid:verification_id>/retry", views.retry, name="retry"),
    path("v/<uuid:verification_id>/cancel", views.cancel, name="cancel"),
    path("v/<uuid:verification_id>/delete", views.delete, name="delete"),
    path("mine", views.checks, name="checks"),
    path("mine/forget", views.forget_checks, name="forget_checks"),
]
