from django.shortcuts import get_object_or_404, render

from verification import selectors
from verification.models import Verification


def home(request):
    return render(request, "verification/home.html")


def result(request, verification_id):
    verification = get_object_or_404(Verification, pk=verification_id)
    return render(request, "verification/result.html", {"result": selectors.verification_result(verification)})
