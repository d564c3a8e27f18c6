from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from web.accounts.roles import highest_role


@login_required
def home(request):
    """Placeholder home page; the dashboard replaces it."""
    return render(request, "dashboard/home.html", {"role": highest_role(request.user)})
