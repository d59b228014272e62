"""Webhook endpoints, their deliveries, test events and redelivery (scope `webhooks`)."""
