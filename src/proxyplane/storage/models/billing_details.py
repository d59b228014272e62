"""What a customer wants on their invoices (issue 22.8): company name, postal address, VAT / tax id. One
row per customer that entered any; none means the invoice shows the account name and email only."""

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class CustomerBillingDetails(Base):
    __tablename__ = "customer_billing_details"

    customer_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True
    )
    company: Mapped[str] = mapped_column(String(200), default="")
    address: Mapped[str] = mapped_column(String(500), default="")  # lines separated by "\n"
    vat_id: Mapped[str] = mapped_column(String(40), default="")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
