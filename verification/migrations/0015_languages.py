from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("verification", "0014_citations"),
    ]

    operations = [
        migrations.AddField(
            model_name="verification",
            name="language",
            field=models.CharField(blank=True, max_length=8),
        ),
        migrations.AddField(
            model_name="source",
            name="language",
            field=models.CharField(blank=True, max_length=8),
        ),
        migrations.AddField(
            model_name="claim",
            name="english_query",
            field=models.TextField(blank=True),
        ),
    ]
