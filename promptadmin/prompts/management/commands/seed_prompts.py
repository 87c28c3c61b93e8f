"""Load the demo registered prompts, interfaces and adapter instructions (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from promptadmin.prompts import demo
from promptadmin.prompts.models import AdapterInstruction, Interface, Prompt
from promptadmin.prompts.services.interfaces import adapter_instruction_create, interface_create
from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create


class Command(BaseCommand):
    help = "Create the demo interfaces, adapter instructions and registered prompts (idempotent)."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        created = 0
        interfaces = {}
        for row in demo.INTERFACES:
            interface = Interface.objects.filter(name=row["name"]).first()
            if interface is None:
                interface = interface_create(actor=None, **row)
                created += 1
            interfaces[row["name"]] = interface
        for row in demo.ADAPTER_INSTRUCTIONS:
            fields = {**row, "interface": interfaces[row["interface"]]}
            lookup = {k: fields[k] for k in ("interface", "task", "order")}
            if not AdapterInstruction.objects.filter(**lookup).exists():
                adapter_instruction_create(actor=None, **fields)
                created += 1
        for row in demo.PROMPTS:
            address = {
                "component": row["component"],
                "agent": row["agent"],
                "task_type": row["task_type"] or "",
            }
            if Prompt.objects.filter(**address).exists():
                continue  # its versions are history: never added twice
            prompt = prompt_create(
                actor=None,
                component=row["component"],
                agent=row["agent"],
                task_type=row["task_type"],
                description=row["description"],
            )
            created += 1
            for version in row["versions"]:
                prompt_version_create(actor=None, prompt=prompt, **version)
                created += 1
        self.stdout.write(f"Demo prompts ready ({created} objects created).")
