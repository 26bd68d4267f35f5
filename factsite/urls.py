from django.urls import include, path

from verification.api.runs import api

urlpatterns = [
    path("api/", api.urls),
    path("", include("verification.web.urls")),
]
