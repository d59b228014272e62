"""Where an exit IP or prefix is, per geo source (issue 36): country, region, city, ASN and organisation.

``address`` is the stock's own text for it (``stock_ips.address``, or a prefix's CIDR), so the gateway's
pool read joins on equality. A row comes from the geo database of its ``geo_source``
(domains/geo/reader.py) or from the operator (``overridden``: a later database refresh leaves it alone).
``city_key`` is the city's geo key (core/place_names.py), indexed so a quote for a city reads that
city's rows only (migration 0042g). Written only by storage/repos/ip_geo.py."""

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class IpGeo(Base):
    __tablename__ = "ip_geo"
    __table_args__ = (Index("ix_ip_geo_city_key", "geo_source", "city_key"),)

    address: Mapped[str] = mapped_column(String(49), primary_key=True)
    geo_source: Mapped[str] = mapped_column(String(10), primary_key=True)  # maxmind | ripe
    country: Mapped[str | None] = mapped_column(String(2), nullable=True)  # ISO alpha-2, upper case
    region: Mapped[str | None] = mapped_column(String(100), nullable=True)
    region_code: Mapped[str | None] = mapped_column(String(8), nullable=True)  # ISO 3166-2 without country
    city: Mapped[str | None] = mapped_column(String(100), nullable=True)
    asn: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    org: Mapped[str | None] = mapped_column(String(200), nullable=True)
    city_key: Mapped[str | None] = mapped_column(String(100), nullable=True)
    overridden: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
