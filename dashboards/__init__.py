"""steplens dashboards package."""
