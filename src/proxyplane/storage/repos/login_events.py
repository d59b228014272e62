"""The writer of `login_events` (each sign-in attempt of a customer, on any channel). Nothing here
commits."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import LoginEvent


async def add(
    session: AsyncSession, customer_id: int, channel: str, client_ip: str, user_agent: str, success: bool
) -> None:
    """One attempt, flushed (the address and agent cut to their columns' widths)."""
    session.add(
        LoginEvent(
            customer_id=customer_id,
            channel=channel,
            client_ip=client_ip[:45],
            user_agent=user_agent[:300],
            success=1 if success else 0,
        )
    )
    await session.flush()
