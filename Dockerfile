FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
RUN useradd --create-home --uid 1000 app \
    && mkdir -p /var/lib/promptadmin/metrics && chown app:app /var/lib/promptadmin/metrics

COPY pyproject.toml README.md ./
COPY assembler ./assembler
COPY promptadmin ./promptadmin
RUN pip install .

COPY . .
# Static files are collected at build time and served by whitenoise.
RUN DEBUG=false SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python manage.py collectstatic --noinput

USER app
EXPOSE 8000
CMD ["gunicorn", "promptadmin.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
