from django.urls import include, path

from verification.api import api

urlpatterns = [
    path("api/", api.urls),
    path("", include("verification.urls")),
]
