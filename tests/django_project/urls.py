"""The admin, for the change-view round trips; public-ID views and the DRF API."""

from django.contrib import admin
from django.urls import include, path, register_converter
from rest_framework.routers import SimpleRouter

from idfields.django_app.urls import public_id_converter
from tests.django_project.testapp import views
from tests.django_project.testapp.models import Author

register_converter(public_id_converter(Author), "author")

router = SimpleRouter()
router.register("authors", views.AuthorViewSet)
router.register("books", views.BookViewSet)
router.register("linked/authors", views.LinkedAuthorViewSet, basename="linked-author")
router.register("linked/books", views.LinkedBookViewSet, basename="linked-book")
router.register("author-pages", views.AuthorPageViewSet, basename="author-page")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("authors/<author:pk>/", views.author_detail, name="author"),
    path("by-text/authors/<str:text>/", views.author_by_text),
    path("api/", include(router.urls)),
]
