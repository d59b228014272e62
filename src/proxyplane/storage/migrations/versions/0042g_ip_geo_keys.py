"""ip_geo: the city's geo key, indexed (issue 36: a quote for a city reads that city's rows, not the
country's whole stock)

`city_key` is core/place_names.geo_key of `city` (what the username's -city- value and a placed
segment's city are compared as), written by storage/repos/ip_geo.py with the name. Existing rows are
keyed here in Python (the key drops accents: no portable SQL for it).

Revision ID: 0042g
Revises: 0042r
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.core.place_names import geo_key

revision: str = "0042g"
down_revision: str | Sequence[str] | None = "0042r"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 2_000


def upgrade() -> None:
    with op.batch_alter_table("ip_geo") as batch:
        batch.add_column(sa.Column("city_key", sa.String(length=100), nullable=True))
    geo = sa.table("ip_geo", sa.column("address"), sa.column("geo_source"), sa.column("city"),
                   sa.column("city_key"))
    bind = op.get_bind()
    rows = bind.execute(sa.select(geo.c.address, geo.c.geo_source, geo.c.city).where(
        geo.c.city.is_not(None))).all()
    update = (
        sa.update(geo)
        .where(geo.c.address == sa.bindparam("a"), geo.c.geo_source == sa.bindparam("s"))
        .values(city_key=sa.bindparam("k"))
    )
    for i in range(0, len(rows), BATCH):
        bind.execute(update, [{"a": a, "s": s, "k": geo_key(c)} for a, s, c in rows[i : i + BATCH]])
    op.create_index("ix_ip_geo_city_key", "ip_geo", ["geo_source", "city_key"])


def downgrade() -> None:
    op.drop_index("ix_ip_geo_city_key", table_name="ip_geo")
    with op.batch_alter_table("ip_geo") as batch:
        batch.drop_column("city_key")
