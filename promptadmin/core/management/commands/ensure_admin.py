"""Create the local admin user if it does not exist, and print how to sign in."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create a superuser from ADMIN_USERNAME/ADMIN_PASSWORD (default admin/admin) if missing."

    def handle(self, *args: Any, **options: Any) -> None:
        username = os.environ.get("ADMIN_USERNAME", "admin")
        password = os.environ.get("ADMIN_PASSWORD", "admin")
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            self.stdout.write(f"Admin user '{username}' exists (password unchanged).")
            return
        User.objects.create_superuser(username=username, email="", password=password)
        self.stdout.write(
            self.style.SUCCESS(f"Created admin user — username: {username}  password: {password}")
        )
