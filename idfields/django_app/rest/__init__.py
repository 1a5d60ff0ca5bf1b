"""Django REST framework integration (``pip install idfields[rest]``).

::

    from idfields.django_app.rest import (
        PublicIdCursorPagination, PublicIdField, PublicIdLookupMixin, PublicIdRelatedField,
    )

    class OrderSerializer(serializers.ModelSerializer):
        id = PublicIdField(source="pk", read_only=True)
        customer = PublicIdRelatedField(queryset=Customer.objects.all())

        class Meta:
            model = Order
            fields = ["id", "customer", "total"]

    class OrderViewSet(PublicIdLookupMixin, viewsets.ModelViewSet):
        queryset = Order.objects.all()     # /orders/<public id>/; a bad string is a 404
        serializer_class = OrderSerializer
        pagination_class = PublicIdCursorPagination

The JSON carries only public strings; a string that does not decode is a 400 naming the problem
(a typo, a changed case, tampering, another key), never a database query. Hyperlinks:
:class:`PublicIdHyperlinkedModelSerializer`, or its two link fields. Integer keys as JSON
strings: :class:`IdFieldsSerializerMixin` with ``IDFIELDS["IDS_AS_STRINGS"]``.
"""

from idfields.django_app.rest._pagination import PublicIdCursorPagination
from idfields.django_app.rest._public import (
    PublicIdField,
    PublicIdHyperlinkedIdentityField,
    PublicIdHyperlinkedModelSerializer,
    PublicIdHyperlinkedRelatedField,
    PublicIdLookupMixin,
    PublicIdRelatedField,
)
from idfields.django_app.rest._strings import IdField, IdFieldsSerializerMixin, IdRelatedField

__all__ = [
    "IdField",
    "IdFieldsSerializerMixin",
    "IdRelatedField",
    "PublicIdCursorPagination",
    "PublicIdField",
    "PublicIdHyperlinkedIdentityField",
    "PublicIdHyperlinkedModelSerializer",
    "PublicIdHyperlinkedRelatedField",
    "PublicIdLookupMixin",
    "PublicIdRelatedField",
]
