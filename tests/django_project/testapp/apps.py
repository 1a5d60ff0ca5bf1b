from django.apps import AppConfig


class TestAppConfig(AppConfig):
    name = "tests.django_project.testapp"
    label = "testapp"
