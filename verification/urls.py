from django.urls import path

from verification import views

app_name = "verification"
urlpatterns = [
    path("", views.home, name="home"),
    path("v/<uuid:verification_id>", views.result, name="result"),
]
