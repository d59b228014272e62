"""Dashboard sign-in state: server-side sessions (failed sign-ins: the shared throttle, throttles.py)."""

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class WebSession(Base):
    """One signed-in browser. The cookie holds a random token; only its sha256 is stored here.
    Log out and password change set `revoked_at`, so a stolen cookie stops working at once."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    client_ip: Mapped[str] = mapped_column(String(45), default="")
    user_agent: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # the team membership this browser acts through (issue 34.5: team_members.id; null: the own account)
    member_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # an operator's read-only view of this customer's dashboard (issue 33): who views (operator email or
    # "cli"); such a session is only accepted from the view cookie and changes nothing
    viewed_by: Mapped[str | None] = mapped_column(String(320), nullable=True)
