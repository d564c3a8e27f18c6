import sys

from devstack.mongo.cli import main

sys.exit(main())
