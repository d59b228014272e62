"""State the legacy account API keeps of its own: when a service's IP list was last updated through
`PUT /api/service/{id}` with `update_list` (the throttle's clock)."""

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class LegacyListUpdate(Base):
    __tablename__ = "legacy_list_updates"

    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), primary_key=True
    )
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
