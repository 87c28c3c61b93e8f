"""Prompt services: permissions, immutability, label rules and concurrent label moves."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, connection, transaction
from django.db.models import ProtectedError

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core.errors import InUseError
from promptadmin.prompts.models import (
    AdapterInstruction,
    Interface,
    Label,
    LabelEvent,
    Prompt,
    PromptVersion,
)
from promptadmin.prompts.services.prompts import (
    prompt_create,
    prompt_label_move,
    prompt_label_remove,
    prompt_label_set,
    prompt_version_create,
    prompt_version_delete,
)
from tests.factories import UserFactory


def versions(prompt: Prompt, count: int) -> list[PromptVersion]:
    return [
        prompt_version_create(
            actor=None, prompt=prompt, user_templates={"default": f"Text {n}: {{{{ x }}}}"}
        )
        for n in range(count)
    ]


@pytest.mark.django_db
def test_versions_are_numbered_per_prompt_and_declare_the_variables_used_by_default() -> None:
    one = prompt_create(actor=None, component="a", agent="b")
    two = prompt_create(actor=None, component="a", agent="b", task_type="t")
    assert [v.number for v in versions(one, 2)] == [1, 2]
    (first,) = versions(two, 1)
    assert first.number == 1
    assert first.variables == ["x"]
    assert len(first.content_hash) == 64


@pytest.mark.django_db
def test_user_templates_are_kept_sorted_by_name() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    version = prompt_version_create(
        actor=None, prompt=prompt, user_templates={"zeta": "z", "alpha": "a", "mid": "m"}
    )
    version.refresh_from_db()
    assert list(version.sorted_user_templates()) == ["alpha", "mid", "zeta"]


@pytest.mark.django_db
def test_the_default_prompt_is_unique_per_component_and_agent() -> None:
    prompt_create(actor=None, component="a", agent="b")
    with pytest.raises(ValidationError, match="already exists"):
        prompt_create(actor=None, component="a", agent="b", task_type=None)


@pytest.mark.django_db
def test_viewers_and_read_keys_cannot_change_prompts() -> None:
    from django.contrib.auth.models import Group

    viewer = UserFactory()
    viewer.groups.add(Group.objects.get(name="viewer"))
    read_key, _ = api_key_create(actor=None, name="reader", scope="read")
    for actor in (viewer, read_key):
        with pytest.raises(PermissionDenied):
            prompt_create(actor=actor, component="a", agent="b")


@pytest.mark.django_db
def test_setting_a_label_where_it_points_records_nothing() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 1)
    prompt_label_set(actor=None, prompt=prompt, name="production", version=1)
    prompt_label_set(actor=None, prompt=prompt, name="production", version=1)
    assert LabelEvent.objects.filter(prompt=prompt).count() == 1


@pytest.mark.django_db
def test_latest_can_be_neither_set_nor_removed() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 1)
    with pytest.raises(ValidationError, match="newest"):
        prompt_label_set(actor=None, prompt=prompt, name="latest", version=1)
    with pytest.raises(ValidationError, match="newest"):
        prompt_label_remove(actor=None, prompt=prompt, name="latest")


@pytest.mark.django_db
def test_the_author_of_a_label_change_is_recorded() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 1)
    author = UserFactory(is_superuser=True)
    prompt_label_set(actor=author, prompt=prompt, name="production", version=1)
    assert LabelEvent.objects.get().user == author


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_label_moves_are_all_recorded_and_none_is_lost() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 5)
    prompt_label_set(actor=None, prompt=prompt, name="production", version=1)
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def move(target: int) -> None:
        try:
            barrier.wait()
            prompt_label_move(actor=None, prompt=prompt, name="production", version=target)
        except BaseException as error:  # reported below
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=move, args=(n,)) for n in (2, 3, 4, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    moves = list(
        LabelEvent.objects.filter(prompt=prompt, action="moved")
        .order_by("id")
        .values_list("from_version", "to_version")
    )
    assert len(moves) == 4
    # Each move starts where the previous one left the label: none was overwritten unseen.
    chain: list[Any] = [1]
    for old, new in moves:
        assert old == chain[-1]
        chain.append(new)
    assert Label.objects.get(prompt=prompt, name="production").version.number == chain[-1]


@pytest.mark.django_db
def test_the_admin_shows_prompts_read_only(client: Any) -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 1)
    client.force_login(UserFactory(is_superuser=True, is_staff=True))
    assert client.get("/admin/prompts/promptversion/").status_code == 200
    version = prompt.versions.get()
    page = client.get(f"/admin/prompts/promptversion/{version.pk}/change/")
    assert page.status_code == 200
    assert b'type="submit"' not in page.content.split(b'id="content-main"')[1]
    assert client.get("/admin/prompts/prompt/add/").status_code == 403


@pytest.mark.django_db
def test_the_newest_version_cannot_be_deleted_so_latest_never_moves_back_silently() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    first, second = versions(prompt, 2)
    with pytest.raises(InUseError, match="'latest'"):
        prompt_version_delete(actor=None, version=second)
    assert prompt.versions.count() == 2
    # An older version no label points at may go; latest stays where it was.
    prompt_version_delete(actor=None, version=first)
    assert list(prompt.versions.values_list("number", flat=True)) == [2]


@pytest.mark.django_db
def test_version_numbers_are_never_reused_even_after_the_newest_row_is_gone() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 3)
    # Whatever removed it (a script, the ORM, a cascade), a number once given stays taken:
    # a client pinned to version=3 must never get other content under that number.
    PromptVersion.objects.filter(prompt=prompt, number=3).delete()
    (fourth,) = versions(prompt, 1)
    assert fourth.number == 4


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_database_refuses_to_change_a_version_whatever_the_code_path() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    (version,) = versions(prompt, 1)
    attempts = [
        lambda: PromptVersion.objects.filter(pk=version.pk).update(system="tampered"),
        lambda: PromptVersion.objects.filter(pk=version.pk).update(config={"x": 1}),
        lambda: PromptVersion.objects.filter(pk=version.pk).update(number=7),
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError, match="never changes"), transaction.atomic():
            attempt()
    version.refresh_from_db()
    assert (version.number, version.system, version.config) == (1, "", {})


@pytest.mark.postgres
@pytest.mark.django_db
def test_deleting_the_author_of_a_version_only_forgets_who_wrote_it() -> None:
    author = UserFactory(is_superuser=True)
    prompt = prompt_create(actor=None, component="a", agent="b")
    version = prompt_version_create(actor=author, prompt=prompt, user_templates={"default": "x"})
    author.delete()
    version.refresh_from_db()
    assert version.author is None
    assert version.user_templates == {"default": "x"}


@pytest.mark.django_db
def test_a_labelled_version_is_protected_from_a_plain_orm_delete() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    first, _second = versions(prompt, 2)
    prompt_label_set(actor=None, prompt=prompt, name="production", version=1)
    with pytest.raises(ProtectedError):
        first.delete()
    assert prompt.versions.filter(number=1).exists()


@pytest.mark.django_db
def test_only_admins_and_admin_keys_set_move_or_remove_a_protected_label() -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 2)
    prompt_label_set(actor=None, prompt=prompt, name="production", version=1)
    author = UserFactory(role="author")
    write_key, _ = api_key_create(actor=None, name="pipeline", scope="write")
    for actor in (author, write_key):
        with pytest.raises(PermissionDenied, match=r"(?i)moving the protected label 'production'"):
            prompt_label_set(actor=actor, prompt=prompt, name="production", version=2)
        with pytest.raises(PermissionDenied, match=r"(?i)removing the protected label"):
            prompt_label_remove(actor=actor, prompt=prompt, name="production")
        with pytest.raises(PermissionDenied, match=r"(?i)setting the protected label"):
            prompt_version_create(
                actor=actor, prompt=prompt, user_templates={"default": "x"}, labels=["production"]
            )
        # Other labels stay theirs.
        prompt_label_set(actor=actor, prompt=prompt, name="staging", version=2)
    assert Label.objects.get(prompt=prompt, name="production").version.number == 1
    assert prompt.versions.count() == 2
    admin_key, _ = api_key_create(actor=None, name="ops", scope="admin")
    for actor in (UserFactory(role="admin"), admin_key):
        prompt_label_set(actor=actor, prompt=prompt, name="production", version=2)
        prompt_label_remove(actor=actor, prompt=prompt, name="production")
        prompt_label_set(actor=actor, prompt=prompt, name="production", version=1)


@pytest.mark.django_db
def test_the_protected_labels_are_a_setting(settings: Any) -> None:
    prompt = prompt_create(actor=None, component="a", agent="b")
    versions(prompt, 1)
    author = UserFactory(role="author")
    settings.PROTECTED_PROMPT_LABELS = ["staging", "qa"]
    prompt_label_set(actor=author, prompt=prompt, name="production", version=1)
    with pytest.raises(PermissionDenied, match=r"(?i)setting the protected labels 'qa', 'staging'"):
        prompt_version_create(
            actor=author, prompt=prompt, user_templates={"default": "x"}, labels=["staging", "qa"]
        )
    settings.PROTECTED_PROMPT_LABELS = []
    prompt_label_set(actor=author, prompt=prompt, name="staging", version=1)


@pytest.mark.django_db
def test_an_interface_or_adapter_change_from_a_stale_read_is_refused_under_the_lock() -> None:
    from promptadmin.core.errors import StaleStateError
    from promptadmin.prompts.services import interfaces

    interface = interfaces.interface_create(actor=None, name="langchain")
    seen = interface.updated_at
    interfaces.interface_update(actor=None, interface=interface, supports_system_prompt=False)
    with pytest.raises(StaleStateError, match="The interface changed since you read it"):
        interfaces.interface_update(
            actor=None, interface=interface, expected_updated_at=seen, name="langchain2"
        )
    with pytest.raises(StaleStateError):
        interfaces.interface_delete(actor=None, interface=interface, expected_updated_at=seen)
    current = Interface.objects.get(pk=interface.pk)
    adapter = interfaces.adapter_instruction_create(actor=None, interface=current, task="parsing")
    seen = adapter.updated_at
    interfaces.adapter_instruction_update(actor=None, instruction=adapter, order=2)
    with pytest.raises(StaleStateError, match="The adapter instruction changed"):
        interfaces.adapter_instruction_delete(
            actor=None, instruction=adapter, expected_updated_at=seen
        )
    interfaces.adapter_instruction_delete(
        actor=None,
        instruction=adapter,
        expected_updated_at=AdapterInstruction.objects.get(pk=adapter.pk).updated_at,
    )
    assert current.name == "langchain" and not AdapterInstruction.objects.exists()
