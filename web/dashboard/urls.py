"""Dashboard pages (included at the root by cdcplatform/urls.py)."""

from django.urls import path

from web.dashboard import topic_admin_views, topic_views, views

app_name = "dashboard"
NAME = "<slug:name>"

urlpatterns = [
    path("", views.home, name="home"),
    path("health/", views.cluster_health, name="health"),
    path("idle-slots/", views.idle_slots, name="idle-slots"),
    path("metrics", views.metrics, name="metrics"),
    path("connectors/new/", views.connector_create, name="connector-new"),
    path(f"connectors/{NAME}/", views.connector_detail, name="connector"),
    path(f"connectors/{NAME}/edit/", views.connector_edit, name="connector-edit"),
    path(f"connectors/{NAME}/offsets/", views.connector_offsets, name="connector-offsets"),
    path(f"connectors/{NAME}/delete/", views.connector_delete, name="connector-delete"),
    path(f"connectors/{NAME}/clone/", views.connector_clone, name="connector-clone"),
    path(f"connectors/{NAME}/config.json", views.connector_export, name="connector-export"),
    path(f"connectors/{NAME}/history.json", views.connector_history, name="connector-history"),
    path(f"connectors/{NAME}/topics/", views.connector_topics, name="connector-topics"),
    path(f"connectors/{NAME}/requests/", views.connector_requests, name="connector-requests"),
    path(f"connectors/{NAME}/replica-sets/<str:replica_set>/", views.replica_set_card, name="replica-set"),
    path(f"connectors/{NAME}/topics/<str:topic>/", topic_views.connector_topic, name="topic"),
    path("brokers/", topic_views.broker_list, name="brokers"),
    path("consumer-groups/", topic_views.group_list, name="groups"),
    path("topics/", topic_views.topic_list, name="topics"),
    path("topics/<str:topic>/", topic_views.topic_page, name="topic-any"),
    path("topics/<str:topic>/produce/", topic_views.produce_message, name="topic-produce"),
    path("topics/<str:topic>/delete/", topic_admin_views.delete, name="topic-delete"),
    path("topics/<str:topic>/config/", topic_admin_views.configure, name="topic-config"),
    path("topics/<str:topic>/groups/<str:group>/reset/", topic_admin_views.group_reset, name="group-reset"),
    path("topics/<str:topic>/groups/<str:group>/delete/", topic_admin_views.group_delete, name="group-delete"),
]
